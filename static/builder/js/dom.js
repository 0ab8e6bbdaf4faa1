// The one helper the editor's modules build elements with: a tag, an optional class and text
// (set as textContent, never as HTML, so text from the API is never markup).

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
