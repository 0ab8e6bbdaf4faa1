"""Carry the plain-text DRF tokens (rest_framework.authtoken, no longer installed) over to
hashed api_token rows, and empty the old table: existing clients keep their token and header,
and no usable key stays in the database."""

import hashlib

from django.db import migrations

TOKEN_KEY_LENGTH = 15  # knox.settings.CONSTANTS.TOKEN_KEY_LENGTH


def carry_over(apps, schema_editor):
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("keeperstate", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, user_id, created FROM authtoken_token")
        rows = cursor.fetchall()
        for key, user_id, created in rows:
            # knox.crypto.hash_token: SHA-512 of the token's UTF-8 bytes, hex.
            digest = hashlib.sha512(key.encode("utf-8")).hexdigest()
            ApiToken(
                digest=digest, token_key=key[:TOKEN_KEY_LENGTH], user_id=user_id, expiry=None,
                name="carried over from the plain-text token table",
            ).save(force_insert=True)
            ApiToken.objects.filter(digest=digest).update(created=created)
        cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):
    dependencies = [("keeperstate", "0009_security_audit_tokens_ratelimits")]

    operations = [migrations.RunPython(carry_over, migrations.RunPython.noop)]
