"""Where a secret may stand: only in a field whose value leaves the run through egress (DESIGN.md §13).

A secret reference (``<<@__secrets:Secrets.NAME>>``) resolves to the secret's value. Redaction
(keeperstate.secrets.redaction) hides that exact value in results, errors and logs, but not a
function of it: ``lower(<<@__secrets:…>>)`` in a Set Fields, a key built from it, a Condition
that compares one letter at a time. So a secret is accepted only in the config fields marked
``secrets=True`` (HTTP Request's URL, headers and body), where it is sent and nothing in the run
computes with it; anywhere else in a node — any other config field, a key the action does not
know, the label, the trigger's config — is SECRET_NOT_ALLOWED_HERE. The validator reports it at
every save (API, MCP, editor, import); the resolver refuses it at run time, before the secret is
read, so a graph stored before this rule cannot compute with one either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.text import json_texts
from keeperstate.engine.references import SECRETS_NODE_ID, TOKEN_RE

if TYPE_CHECKING:
    from keeperstate.engine.registry import ActionDefinition

# Where the sentence sends an author: the egress fields of every action that has them.
EGRESS_FIELDS = "an HTTP Request's URL, headers or body"


class SecretNotAllowedHere(CodedError):
    error = Code.SECRET_NOT_ALLOWED_HERE


def secret_fields(definition: ActionDefinition | None) -> frozenset[str]:
    """The config fields of an action whose value may hold a secret reference."""
    if definition is None:
        return frozenset()
    return frozenset(f.name for f in definition.config_fields if f.secrets)


def holds_secret(value: Any) -> bool:
    """Whether any text of a JSON value (object keys included) holds a secret reference."""
    return any(match["node"] == SECRETS_NODE_ID for text in json_texts(value) if SECRETS_NODE_ID in text
               for match in TOKEN_RE.finditer(text))


def not_allowed(where: str, *, field: str | None = None) -> SecretNotAllowedHere:
    """The refusal, naming the place (a field's name, "the label"…)."""
    return SecretNotAllowedHere(
        f"A secret (<<@__secrets:Secrets.NAME>>) may stand only where it leaves the run, in {EGRESS_FIELDS}; "
        f"{where} holds one. Remove it: nothing in a run may compute with a secret's value.",
        field=field,
    )


def misplaced_in_config(config: Any, definition: ActionDefinition | None) -> list[SecretNotAllowedHere]:
    """One refusal per config field, outside the action's egress fields, that holds a secret
    reference (in its name or its value). The validator and the runner both ask this."""
    if not isinstance(config, dict):
        return []
    allowed = secret_fields(definition)
    return [not_allowed(f"the field '{name}'", field=str(name)) for name, value in config.items()
            if name not in allowed and (holds_secret(name) or holds_secret(value))]


def misplaced_secrets(node: Any, definition: ActionDefinition | None) -> list[SecretNotAllowedHere]:
    """Every place of a node outside its action's egress fields that holds a secret reference: its
    config's fields (``definition`` None: a trigger's, none of which may), then the rest of the
    node (label, id…)."""
    if not isinstance(node, dict):
        return []
    data: dict[str, Any] = node["data"] if isinstance(node.get("data"), dict) else {}
    found = misplaced_in_config(data.get("config"), definition)
    rest = {**node, "data": {k: v for k, v in data.items() if k != "config"}}
    if holds_secret(rest):
        label = holds_secret(data.get("label"))
        found.append(not_allowed("the node's label" if label else "the node outside its config",
                                 field="label" if label else None))
    return found
