"""The embedded Postgres as a Django database backend (ENGINE ``keeperstate.ops.embedded``).

Django's postgresql backend, except that a connection whose settings have no HOST yet starts (or
joins) the embedded server first and fills in its address: the server starts with the first
connection a process opens, never when settings are imported (keeperstate.ops.database).
"""
