"""``manage.py a2a_apikey create|list|revoke``: API keys for the A2A endpoint.

``create USER NAME [--expires-in DAYS] [--create-user]`` prints the key once (only its digest is
stored), ``list [--user USER]`` shows keys by prefix, ``revoke PREFIX_OR_KEY`` revokes one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from a2a_toolcall.apikeys import KEY_PREFIX, mint_api_key, split_key
from a2a_toolcall.models import ApiKey


class Command(BaseCommand):
    help = "Create, list and revoke API keys for the A2A endpoint (docs/security.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="create|list|revoke")
        create = actions.add_parser("create", help="Mint a key for a user; prints it once.")
        create.add_argument("user", help="The username the key acts as.")
        create.add_argument("name", help="What the key is for (shown in lists and the admin).")
        create.add_argument(
            "--expires-in",
            type=float,
            metavar="DAYS",
            help="Days until it expires (default never).",
        )
        create.add_argument(
            "--create-user",
            action="store_true",
            help="Create the user (with no password) if it does not exist.",
        )
        create.add_argument(
            "--quiet", action="store_true", help="Print the key alone (for scripts)."
        )
        listing = actions.add_parser("list", help="List keys (never the keys themselves).")
        listing.add_argument("--user", help="Only this user's keys.")
        revoke = actions.add_parser("revoke", help="Revoke a key by its prefix or the key itself.")
        revoke.add_argument("key", help="The key's prefix (8 characters), or the whole key.")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['action']}")(options)

    def _create(self, options: dict[str, Any]) -> None:
        users = get_user_model()
        lookup = {users.USERNAME_FIELD: options["user"]}
        try:
            user = users._default_manager.get(**lookup)
        except users.DoesNotExist:
            if not options["create_user"]:
                raise CommandError(
                    f"No user {options['user']!r} (create it first, or pass --create-user)"
                ) from None
            user = users._default_manager.create_user(**lookup)
            user.set_unusable_password()
            user.save()
        days = options["expires_in"]
        if days is not None and days <= 0:
            raise CommandError("--expires-in must be a positive number of days")
        expires = timezone.now() + timedelta(days=days) if days is not None else None
        row, key = mint_api_key(user, options["name"], expires_at=expires)
        if options["quiet"]:
            self.stdout.write(key)
            return
        self.stdout.write(f"API key for {options['user']} ({row.name}); it is not shown again:")
        self.stdout.write(key)
        if expires is not None:
            self.stdout.write(f"Expires {expires.isoformat(timespec='seconds')}.")

    def _list(self, options: dict[str, Any]) -> None:
        keys = ApiKey.objects.select_related("user").order_by("user_id", "-created_at")
        if options["user"]:
            users = get_user_model()
            keys = keys.filter(**{f"user__{users.USERNAME_FIELD}": options["user"]})
        rows = list(keys)
        if not rows:
            self.stdout.write("No API keys.")
            return
        for key in rows:
            state = "revoked" if key.revoked else "expired" if key.is_expired else "active"
            used = key.last_used_at.isoformat(timespec="seconds") if key.last_used_at else "never"
            expires = key.expires_at.isoformat(timespec="seconds") if key.expires_at else "never"
            self.stdout.write(
                f"{KEY_PREFIX}{key.prefix}_…  {key.user.get_username():<20} {state:<8} "
                f"last used {used:<25} expires {expires:<25} {key.name}"
            )

    def _revoke(self, options: dict[str, Any]) -> None:
        given = options["key"].strip()
        parts = split_key(given)
        prefix = parts[0] if parts else given.removeprefix(KEY_PREFIX).rstrip("_…")
        try:
            key = ApiKey.objects.get(prefix=prefix)
        except ApiKey.DoesNotExist:
            raise CommandError(f"No API key with prefix {prefix!r}") from None
        if key.revoked:
            self.stdout.write(f"{KEY_PREFIX}{key.prefix}_… ({key.name}) was already revoked.")
            return
        key.revoked = True
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked", "revoked_at"])
        self.stdout.write(f"Revoked {KEY_PREFIX}{key.prefix}_… ({key.name}).")
