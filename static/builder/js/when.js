// Relative times as the pages show them: "in 8 s", "3 min ago", "now". The same units as the
// server's `relative` template filter (builder/templatetags/builder_time.py), so a page reads
// alike before and after its script updates it. Elements with data-relative="<ISO time>" are
// kept current by tickRelativeTimes().

const UNITS = [[86400, "d"], [3600, "h"], [60, "min"], [1, "s"]];

export function relativeTime(iso, now = Date.now()) {
  const seconds = Math.round((new Date(iso) - now) / 1000);
  const size = Math.abs(seconds);
  if (size < 1) return "now";
  const [unit, name] = UNITS.find(([u]) => size >= u);
  const amount = `${Math.floor(size / unit)} ${name}`;
  return seconds > 0 ? `in ${amount}` : `${amount} ago`;
}

export function tickRelativeTimes(root = document, now = Date.now()) {
  for (const node of root.querySelectorAll("[data-relative]")) {
    const text = relativeTime(node.dataset.relative, now);
    if (node.textContent !== text) node.textContent = text;
  }
}
