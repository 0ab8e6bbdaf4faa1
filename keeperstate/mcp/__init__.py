"""MCP for agents (DESIGN.md §16): ``/mcp/`` speaks the Model Context Protocol over Streamable HTTP,
served by the official ``mcp`` SDK inside the site's own WSGI process (ADR 0042).

An adapter like the API: every tool calls the same services (workflow services, the execution
service, the state store, the validator) and answers the API's JSON; no rule lives here.
"""
