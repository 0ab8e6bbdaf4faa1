// <<@nodeId:Label.path>> references, read the way the server reads them (DESIGN.md §3).

export const SYSTEM_NODE_ID = "__system";
export const SECRETS_NODE_ID = "__secrets"; // <<@__secrets:Secrets.NAME>>: an organization secret

const TOKEN_SOURCE = "<<@([^:<>\\s]+):(.*?)>>";

export function findTokens(text) {
  const found = [];
  if (typeof text !== "string") return found;
  const re = new RegExp(TOKEN_SOURCE, "g");
  let match;
  while ((match = re.exec(text)) !== null) {
    found.push({ token: match[0], nodeId: match[1], rest: match[2], index: match.index });
  }
  return found;
}

// Split "Label.path" by the node's current label first, else at the first dot.
export function splitLabelPath(rest, currentLabel) {
  if (currentLabel && rest.startsWith(`${currentLabel  }.`)) {
    return [currentLabel, rest.slice(currentLabel.length + 1)];
  }
  const dot = rest.indexOf(".");
  return dot < 0 ? [rest, ""] : [rest.slice(0, dot), rest.slice(dot + 1)];
}

// What a token shows: the node's current label and the path, or that its node is gone.
export function describeToken(tok, nodesById) {
  if (tok.nodeId === SYSTEM_NODE_ID) {
    const [, path] = splitLabelPath(tok.rest, "System");
    return { label: "System", path, missing: false, system: true };
  }
  if (tok.nodeId === SECRETS_NODE_ID) {
    // A secret is not a node: the badge names it ("Secret ALERT_URL"), never "node deleted".
    const [, name] = splitLabelPath(tok.rest, "Secrets");
    return { label: `Secret ${name}`, path: "", missing: false, system: true, secret: true };
  }
  const node = nodesById.get(tok.nodeId);
  const current = node ? (node.data && node.data.label) || node.id : null;
  const [authored, path] = splitLabelPath(tok.rest, current);
  return { label: current || authored, path, missing: !node, system: false };
}

export function badgeElement(tok, nodesById) {
  const info = describeToken(tok, nodesById);
  const badge = document.createElement("span");
  badge.className = `ref-badge${  info.missing ? " missing" : ""  }${info.system ? " system" : ""  }${info.secret ? " secret" : ""}`;
  badge.dataset.nodeId = tok.nodeId;
  badge.title = info.missing
    ? `${tok.token}: node '${tok.nodeId}' is no longer in the workflow. Pick the value again with @.`
    : tok.token;
  const label = document.createElement("span");
  label.className = "ref-badge-node";
  label.textContent = info.missing ? `⚠ ${info.label}` : info.label;
  const path = document.createElement("span");
  path.className = "ref-badge-path";
  path.textContent = info.path;
  badge.append(label);
  if (info.path) badge.append(path);
  if (info.missing) {
    const note = document.createElement("span");
    note.className = "ref-badge-note";
    note.textContent = "node deleted";
    badge.append(note);
  }
  return badge;
}

// Whether any reference in `text` names a node that is not in the workflow (built-ins and secrets never do).
export function hasBrokenReference(text, nodesById) {
  return findTokens(text).some((tok) => describeToken(tok, nodesById).missing);
}

export function renderBadges(container, text, nodesById) {
  container.replaceChildren(...findTokens(text).map((tok) => badgeElement(tok, nodesById)));
}

// Text with each token replaced by a badge (for node summaries on the canvas).
export function richText(container, text, nodesById) {
  const parts = [];
  let last = 0;
  for (const tok of findTokens(text)) {
    if (tok.index > last) parts.push(document.createTextNode(text.slice(last, tok.index)));
    parts.push(badgeElement(tok, nodesById));
    last = tok.index + tok.token.length;
  }
  if (last < text.length) parts.push(document.createTextNode(text.slice(last)));
  container.replaceChildren(...parts);
}
