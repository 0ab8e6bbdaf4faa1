// Light or dark: the page follows the system (prefers-color-scheme, and its changes) until the
// author picks one with the top bar's toggle, which this browser remembers. It sets
// <html data-theme="light|dark">, which builder.css reads. A classic script in <head>, so the
// scheme is set before the page is drawn (no flash of the other one).

(function theme() {
  const KEY = "keeperstate.theme";
  const root = document.documentElement;
  const media = window.matchMedia("(prefers-color-scheme: dark)");
  const chosen = () => localStorage.getItem(KEY); // "light", "dark", or null: the system's
  const scheme = () => chosen() || (media.matches ? "dark" : "light");

  function apply() {
    const picked = chosen();
    root.dataset.theme = scheme();
    root.dataset.themeSource = picked ? "chosen" : "system";
    const button = document.getElementById("theme-toggle");
    if (button) {
      const dark = scheme() === "dark";
      button.setAttribute("aria-pressed", String(dark));
      button.textContent = dark ? "☾ Dark" : "☀ Light";
      button.title = `${dark ? "Dark" : "Light"} mode${picked ? "" : " (as the system)"}: click for ${dark ? "light" : "dark"}`;
    }
    document.dispatchEvent(new CustomEvent("keeperstate:theme", { detail: { scheme: scheme() } }));
  }

  apply();
  media.addEventListener("change", apply);
  document.addEventListener("DOMContentLoaded", () => {
    apply();
    document.getElementById("theme-toggle")?.addEventListener("click", () => {
      const next = scheme() === "dark" ? "light" : "dark";
      // Back to following the system when the choice is what the system says anyway.
      if (next === (media.matches ? "dark" : "light")) localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, next);
      apply();
    });
  });
}());
