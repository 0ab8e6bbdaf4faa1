"""The error catalogue and the one exception shape every user-facing failure takes.

``Code`` lists every code KeeperState answers, each with its HTTP status and a default message
that says what to do (DRF's ``default_detail``; Saleor's ``error_codes.py``). Nothing else
declares a code: a ``CodedError`` subclass names its entry (``error = Code.STATE_KEY_LIMIT``), a
validation finding names one, and the adapters turn either into an answer with ``error_body``
(JSON) or ``form_error`` (a Django form). docs/errors.md is the catalogue as a table;
tests/test_error_catalogue.py holds the three (catalogue, code, docs) equal.

A status matters only where a code becomes an HTTP answer; a node's failure in a run is recorded
in the execution whatever its status says.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum, unique
from typing import Any, TypeVar

from django.core.exceptions import ValidationError


@unique
class Code(Enum):
    """A code is its member name; its value is (HTTP status, default message)."""

    # --- requests and authentication (every adapter) ------------------------------------------
    BAD_REQUEST = (400, "The request could not be understood; check it and try again.")
    PARSE_ERROR = (400, "The body is not valid JSON. Send one JSON document (Content-Type: application/json).")
    REQUEST_TOO_LARGE = (413, "The request body is too large. Send a smaller body.")
    UNSUPPORTED_MEDIA_TYPE = (415, "Send the body as JSON, with Content-Type: application/json.")
    NOT_ACCEPTABLE = (406, "This address answers JSON only; accept application/json.")
    METHOD_NOT_ALLOWED = (405, "This address does not take that method; see the Allow header.")
    NOT_AUTHENTICATED = (401, "Not authenticated: send a token (Authorization: Token …) or log in.")
    AUTHENTICATION_FAILED = (401, "The credentials are not valid (a revoked, expired or mistyped token).")
    PERMISSION_DENIED = (403, "You do not have permission to perform this action.")
    CSRF_FAILED = (403, "The request lacks a valid CSRF token. Reload the page and try again.")
    NOT_FOUND = (404, "Nothing was found at this address; check the URL.")
    THROTTLED = (429, "Too many requests. Wait the seconds in Retry-After, then try again.")
    URI_TOO_LONG = (414, "The address is too long; a state key is at most 256 characters. Send a shorter one.")
    REQUEST_HEADERS_TOO_LARGE = (431, "The request's headers are too many or too large; send fewer or shorter.")
    ORIGIN_NOT_ALLOWED = (403, "The request's Origin is not this site's; call /mcp/ from this site or a client.")
    INTERNAL_ERROR = (500, "Something went wrong on our side; the error was logged for the administrators.")
    DATABASE_ERROR = (503, "The database could not complete the request; the error was logged. Try again.")
    DATABASE_UNAVAILABLE = (503, "The database is unavailable or failing over. Retry after Retry-After seconds, "
                            "a run with the same Idempotency-Key: the execution tells what happened.")

    # --- workflows: saving and validating a graph ---------------------------------------------
    WORKFLOW_INVALID = (400, "The workflow has errors; the validation report in details says where.")
    INVALID_NAME = (400, "Give the workflow a name of 1 to 200 visible characters.")
    WORKFLOW_TOO_LARGE = (400, "A workflow holds at most 500 nodes, 1,000 edges and 1 MB of graph JSON; split it.")
    INVALID_SHAPE = (400, "A node or edge does not have the shape of a workflow graph; see the API schema.")
    TRIGGER_COUNT = (400, "A workflow needs exactly one trigger node.")
    UNKNOWN_TRIGGER = (400, "Unknown trigger type. Use Manual, Webhook or Schedule.")
    UNKNOWN_ACTION = (400, "Unknown action type. Pick an action from the palette.")
    CYCLE = (400, "The workflow has a cycle, so no node of it runs before another; remove one of its edges.")
    INVALID_HANDLE = (400, "An edge leaves a branching action without a branch; connect it from one of its handles.")
    INVALID_NODE_ID = (400, "A node id is text without spaces, ':', '<' or '>', all of it visible.")
    INVALID_LABEL = (400, "A node label is visible text without '<<' or '>>'.")
    INVALID_TEXT = (400, "The text contains the character U+0000, which cannot be stored; remove it.")
    UNREACHABLE = (400, "No path from the trigger reaches this node, so it never runs.")
    NODE_NOT_FOUND = (400, "There is no such node in this graph; select a node of the workflow.")
    PINNED_DATA_INVALID = (400, "Pinned data stands in for a node's output, so it is a JSON object; unpin or fix it.")
    SETTINGS_INVALID = (400, 'A workflow\'s settings are an object of known settings, e.g. {"errorWorkflow": null}.')
    ERROR_WORKFLOW_INVALID = (400, "The error workflow must be another workflow of the same organization.")

    # --- config fields ------------------------------------------------------------------------
    REQUIRED = (400, "This field is required: enter a value.")
    INVALID_NUMBER = (400, "This field takes a whole number, or exactly one @ reference.")
    INVALID_CHOICE = (400, "This field takes one of the values it lists.")
    INVALID_JSON = (400, "This field takes valid JSON.")
    CONFIG_INVALID = (400, "The value of this field is not one the action can take.")
    SCHEDULE_INVALID = (400, "Give a Schedule either an interval in whole seconds or a cron expression.")
    CONDITION_INVALID = (400, "The condition is not an expression the evaluator allows; see the field's help.")
    EXPRESSION_INVALID = (400, "The expression cannot be read or evaluated; see the field's help for what it allows.")
    LOOP_BODY_INVALID = (400, "A For Each's body is the nodes reached from its each handle, and only from there.")
    REFERENCE_NOT_ALLOWED = (400, "This field does not take @ references; enter a value.")
    REFERENCE_INVALID = (400, "The reference does not name a field. Pick the value again from the @ list.")
    REFERENCE_MISSING_NODE = (400, "The reference points at a node that is gone. Pick the value again from the @ list.")
    REFERENCE_NOT_UPSTREAM = (400, "The reference points at a node that does not run before this one; connect it.")
    REFERENCE_UNKNOWN_FIELD = (400, "The referenced node has no such output field.")

    # --- runs ---------------------------------------------------------------------------------
    INPUT_INVALID = (400, 'The run input must be a JSON object, for example {"block": 100}.')
    IDEMPOTENCY_KEY_INVALID = (400, "The Idempotency-Key header takes 1 to 200 printable characters.")
    TEMPLATE_UNRESOLVED = (400, "A reference could not be resolved. Make sure its node runs before this one.")
    ACTION_FAILED = (500, "The action failed unexpectedly; the error was logged for the administrators. Try again.")
    WORKFLOW_DELETED = (409, "The workflow was deleted while this run was in progress.")
    RUN_INTERRUPTED = (503, "The process running this execution stopped before it finished; it was not run again.")
    RUN_SKIPPED = (409, "Skipped: the previous run of this workflow was still queued or running (overlap: skip).")
    RUN_INTERNAL_ERROR = (500, "The run stopped on an internal error, which was logged for the administrators.")
    RUN_TOO_LONG = (409, "The run reached 10,000 node runs, the most one run may make; loop over fewer items.")
    LOOP_ITEM_FAILED = (400, "A node of the loop's body failed on one item; the loop stopped there.")
    FAILED_BY_WORKFLOW = (409, "A Fail Run node of the workflow ended the run as failed; its message says why.")

    # --- workflow state -----------------------------------------------------------------------
    STATE_INVALID_KEY = (400, "A state key is text of 1 to 256 visible characters, such as 'cursor'.")
    STATE_INVALID_VALUE = (400, "State holds text, numbers, booleans, lists or objects; not empty text or null.")
    STATE_VALUE_TOO_LARGE = (413, "A state value is at most 8 KB of JSON; keep payloads out of state.")
    STATE_INVALID_TTL = (400, "TTL is a whole number of seconds, 1 or more; leave it empty for no expiry.")
    STATE_INVALID_EXPECTED_VERSION = (400, "expectedVersion is a whole number, 0 or more, as State Get returns it.")
    STATE_KEY_LIMIT = (409, "The workflow holds as many live state keys as it may; reuse or delete keys.")
    STATE_ORG_BUDGET = (409, "The organization's state is at its budget; delete keys or give them a TTL.")
    STATE_VERSION_CONFLICT = (409, "The key was changed by another run. Read it again and retry with the new version.")
    STATE_WRITE_CONFLICT = (409, "Writers of the same key got in each other's way; nothing was changed. Run it again.")
    STATE_NO_WORKFLOW_CONTEXT = (400, "State belongs to a workflow; run this action inside a workflow.")
    STATE_STORAGE_ERROR = (503, "The database refused the state write, so nothing was changed. Run the workflow again.")

    # --- HTTP Request and egress --------------------------------------------------------------
    HTTP_STATUS = (400, "The server answered outside 2xx; turn off Fail on error to handle the answer.")
    HTTP_TIMEOUT = (400, "The server did not answer in time; raise the timeout or check the server.")
    HTTP_RESPONSE_TOO_LARGE = (400, "The answer is larger than the largest answer a run reads.")
    HTTP_RESPONSE_NOT_JSON = (400, "The answer is not JSON; set Response type to text or auto.")
    HTTP_REQUEST_FAILED = (400, "The request could not be sent (connection refused, DNS, TLS); check the URL.")
    HTTP_TOO_MANY_REDIRECTS = (400, "The server redirected more than 5 times; call the final address.")
    HTTP_EGRESS_BLOCKED = (400, "The address is private or internal, which runs may not reach.")
    HTTP_RPC_ERROR = (400, "The JSON-RPC server answered an error; check the method and its params.")

    # --- secrets and tokens -------------------------------------------------------------------
    SECRET_INVALID_NAME = (400, "A secret's name is 1 to 64 letters, digits or _, e.g. API_KEY.")
    SECRET_INVALID_VALUE = (400, "A secret's value is non-empty text of at most 8 KB.")
    SECRET_LIMIT = (409, "The organization keeps as many secrets as it may; delete one it no longer uses.")
    SECRET_NOT_ALLOWED_HERE = (
        400, "A secret may stand only in an HTTP Request's URL, headers or body, where it leaves the run; remove it.")
    SECRET_UNDECRYPTABLE = (400, "The secret cannot be decrypted with the configured key; save it again.")
    TOKEN_INVALID = (400, "Give the token a name of at most 100 visible characters and a valid expiry.")

    # --- state over HTTP and MCP (DESIGN.md §15, §16) -----------------------------------------
    STATE_KEY_NOT_FOUND = (404, "No live state key by that name in this workflow; list the keys with GET …/state/.")
    # --- charts -------------------------------------------------------------------------------
    STATS_INVALID_RANGE = (400, "range is one of 1h, 24h or 7d, e.g. ?range=24h; leave it out for 24h.")
    # --- the editor: retry, test step, versions, references ----------------------------------
    RUN_NOT_RETRYABLE = (409, "Only a failed or interrupted run can be retried; run the workflow instead.")
    STEP_WOULD_WRITE = (409, "This step writes to the workflow's state; send allowWrites: true to run it anyway.")
    STEP_NOT_RUNNABLE = (400, "Only an action node can be tested on its own; the trigger's output is the run input.")
    REFERENCE_LITERAL = (400, "This looks like a reference typed as text (@node.field); pick it from the @ list.")
    # --- moving a workflow to another organization -------------------------------------------
    MOVE_SAME_ORGANIZATION = (400, "The workflow is already in that organization; pick another one to move it to.")
    MOVE_NOT_PERMITTED = (403, "Moving a workflow takes an owner or admin of both organizations; ask one of them.")
    MOVE_RUN_IN_PROGRESS = (
        409, "A run of the workflow is queued or running; deactivate it, let the run end, then move it again.")
    MOVE_OVER_BUDGET = (409, "The other organization's state budget cannot take this workflow's keys; free some.")

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message


class CodedError(Exception):
    """A failure a user can cause or meet: its catalogue entry, a sentence saying what to do (the
    entry's default unless the raiser knows better), the field at fault and structured details."""

    error: Code  # each subclass names its entry; CodedError.of sets one per instance

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None,
                 field: str | None = None):
        self.message = message or self.error.message
        super().__init__(self.message)
        self.details = details or {}
        self.field = field

    @property
    def code(self) -> str:
        return self.error.name

    @property
    def status_code(self) -> int:
        return self.error.status

    @classmethod
    def of(cls, error: Code, message: str | None = None, **kwargs: Any) -> CodedError:
        """An error of any catalogue entry, where no subclass of its own is worth a name."""
        raised = cls.__new__(cls)
        raised.error = error
        CodedError.__init__(raised, message, **kwargs)
        return raised

    def as_result(self) -> dict[str, Any]:
        """The failed node-result shape of DESIGN.md §4."""
        result: dict[str, Any] = {"success": False, "error": self.message, "code": self.code}
        if self.details:
            result["details"] = self.details
        return result


def error_body(
    error: Code | CodedError, detail: str | None = None, *, field: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The one JSON shape of an error: ``{"code", "detail"}`` plus ``field`` and ``details`` when
    they help. From a CodedError (its own message, field and details) or a catalogue entry."""
    if isinstance(error, CodedError):
        detail, field, details = detail or error.message, field or error.field, details or error.details
        error = error.error
    body: dict[str, Any] = {"code": error.name, "detail": detail or error.message}
    if field:
        body["field"] = field
    if details:
        body["details"] = details
    return body


def form_error(error: CodedError) -> ValidationError:
    """A coded error as a Django form's field error, keeping its code."""
    return ValidationError(error.message, code=error.code)


T = TypeVar("T")


def form_checked(check: Callable[[Any], T], value: Any) -> T:
    """``check(value)`` in a form's clean method: its coded refusal becomes the field's error."""
    try:
        return check(value)
    except CodedError as exc:
        raise form_error(exc) from exc
