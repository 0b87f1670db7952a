"""Database logins: where a password comes from, and the rule that one must be given.

Every component that logs in to a database (a MySQL or Oracle source, the shadow source,
a target) inherits ``PasswordLogin``. A password comes from exactly one of:

- ``password``: in the YAML or its environment variable (taken verbatim, cdc.config.models);
- ``password_file``: a file read when the config is loaded, as Docker and Kubernetes mount
  secrets (one trailing newline is dropped: ``echo secret > file`` works);
- the component's DSN (``ClassVar dsn_field``), ``scheme://user:password@host/...``: the
  password is taken OUT of the DSN at load, so the DSN that remains is safe to show.

Giving none is an error naming the key (a forgotten ``CDC_SOURCES__0__PASSWORD`` must not
become a silent attempt without password), unless ``passwordless: true`` declares a login
without one (trust/peer authentication, client certificates, ~/.pgpass). An empty password
or password file is an error too: an unset shell variable looks exactly like that.

The password is a pydantic ``SecretStr`` (``**********`` in repr, str and model dumps);
connecting code unwraps it with ``login_kwargs()`` at the moment it connects.

Secrets in blocks of library settings (``kafka.client``, a lake target's ``storage_options`` and
Iceberg ``catalog``) follow one rule, :func:`resolve_secrets`: a setting the block calls secret is
held as a SecretStr, ``<secret>_file`` reads it from a file into a :class:`FileSecret`, and
:func:`reveal` unwraps the block only where it is handed to the library. :class:`SecretDsn` is a
URI that may embed a password (an Iceberg ``catalog_uri``): shown with the password masked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, Field, SecretStr, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from cdc.config.dsn import mask, split_password

FILE_SUFFIX = "_file"  # <secret>_file: the secret is read from that file (any case: _FILE too)


def read_secret_file(path: str) -> str:
    """The secret in ``path`` without one trailing newline. ValueError names the file (never
    the content) when it cannot be read or holds nothing."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    if not text:
        raise ValueError(f"{path} is empty")
    return text


class FileSecret(SecretStr):
    """A secret read from a file: the value (masked like any SecretStr) and the ``path`` it came from."""

    def __init__(self, value: str, path: str) -> None:
        super().__init__(value)
        self.path = path


def file_secret(path: str, where: str) -> FileSecret:
    """The secret in the file ``path``; ValueError naming ``where`` (the setting) and the file."""
    try:
        return FileSecret(read_secret_file(path), path)
    except ValueError as exc:
        raise ValueError(f"{where}: secret file {exc}") from None


class SecretDsn(SecretStr):
    """A DSN or URI that may hold a password (``postgresql://u:pw@host/db``): repr and str show it
    with the password masked (``cdc.dsn.mask``), JSON dumps as ``**********``; the library gets
    ``get_secret_value()``."""

    def _display(self) -> str:
        return mask(self.get_secret_value()) or ""


def secret_file_of(name: str, is_secret: Callable[[str], bool], plain: Collection[str] = ()) -> str | None:
    """The secret ``name`` reads from a file (``sasl.password`` for ``sasl.password_file``), or None."""
    if name.lower().endswith(FILE_SUFFIX) and name.lower() not in plain:
        base = name[: -len(FILE_SUFFIX)]
        return base if is_secret(base) else None
    return None


def resolve_secrets(raw: Mapping[str, Any], key: str, is_secret: Callable[[str], bool],
                    plain: Collection[str] = ()) -> dict[str, Any]:
    """A block of library settings with its secrets held: a setting ``is_secret`` names becomes a SecretStr,
    ``<secret>_file`` (suffix in any case) is read into a FileSecret under the secret's name; every other
    setting is returned unchanged (the caller checks them). ``plain``: lower-case names that end in
    ``_file`` but are the library's own settings (a path the library reads itself), kept as they are.
    ValueError naming ``key.<setting>`` (never the value) for a secret given twice, a secret that is not
    text, or a secret file that cannot be read."""
    out: dict[str, Any] = {}
    for name, value in raw.items():
        where = f"{key}.{name}"
        secret = secret_file_of(name, is_secret, plain)
        if secret is not None:
            if secret in raw:
                raise ValueError(f"{where}: give {key}.{secret} or {where}, not both")
            out[secret] = value if isinstance(value, FileSecret) else file_secret(str(value), where)
        elif is_secret(name) and name.lower() not in plain:
            if not isinstance(value, (str, int, SecretStr)) or isinstance(value, bool):  # never shown: a mis-parsed secret
                raise ValueError(f"{where}: a secret is text; quote it (a value in [...] or {{...}} reads as a "
                                 f"list or mapping), or use {where}_file")
            out[name] = value if isinstance(value, SecretStr) else SecretStr(str(value))
        else:
            out[name] = value
    return out


def reveal(block: Mapping[str, Any]) -> dict[str, Any]:
    """``block`` with its SecretStr values unwrapped: only for handing it to the library that uses it."""
    return {k: v.get_secret_value() if isinstance(v, SecretStr) else v for k, v in block.items()}


def scrub(text: str, secrets: Collection[str], dsn: str | None = None) -> str:
    """``text`` (a library's error message) with ``dsn`` shown masked and every secret replaced by ``***``."""
    if dsn:
        text = text.replace(dsn, mask(dsn) or "")
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


# Object-store and catalog settings (a lake target's storage_options, an Iceberg catalog): a setting is a
# secret when its name, in any case, contains secret, password, passwd, token, credential or sas_key,
# or ends in "key" (AWS_SECRET_ACCESS_KEY, azure_storage_account_key, AWS_SESSION_TOKEN, s3.secret-access-key,
# adls.account-key, credential, token). Ids are not (AWS_ACCESS_KEY_ID, s3.access-key-id).
STORE_SECRET = re.compile(r"secret|passw(or)?d|token|credential|sas_key|key$", re.IGNORECASE)
# settings the libraries define that name a file they read themselves: passed as they are
STORE_FILE_SETTINGS = frozenset({"aws_web_identity_token_file", "azure_federated_token_file"})


def is_store_secret(name: str) -> bool:
    """True for an object-store or catalog setting that holds a secret (rule at STORE_SECRET)."""
    return name.lower() not in STORE_FILE_SETTINGS and bool(STORE_SECRET.search(name))


class PasswordLogin(BaseModel):
    """``password`` / ``password_file`` / ``passwordless`` of one database login (module docstring).

    After validation ``password`` is a SecretStr (empty for a declared passwordless login), or None
    for a component that logs in nowhere (``needs_login``) and was given none.
    """

    dsn_field: ClassVar[str | None] = None  # a DSN field that may embed the password

    password: SecretStr | None = Field(default=None, description="the password (better: password_file or env)")
    password_file: str | None = Field(default=None, description="file holding the password (Docker/K8s secret)")
    passwordless: bool = Field(default=False, description="true: log in without a password, on purpose")

    def needs_login(self) -> bool:
        """False for a component that logs in nowhere (e.g. a file target): no password required."""
        return True

    def login_kwargs(self) -> dict[str, Any]:
        """``{"password": ...}`` unwrapped for the driver's connect(), or {} without a password.
        Call it when connecting, never to store or log the result."""
        secret = self.password.get_secret_value() if self.password is not None else ""
        return {"password": secret} if secret else {}

    @model_validator(mode="after")
    def _resolve_password(self) -> PasswordLogin:
        no_password = self.passwordless or not self.needs_login()
        given = [key for key in ("password", "password_file") if getattr(self, key) is not None]
        if "password" in given and no_password and not self.password.get_secret_value():
            given.remove("password")  # "" where none is needed says the same (and a dumped config reloads)
        if self.dsn_field and getattr(self, self.dsn_field):
            dsn, embedded = split_password(getattr(self, self.dsn_field))
            if embedded is not None:
                given.append(self.dsn_field)
                setattr(self, self.dsn_field, dsn)
                self.password = SecretStr(embedded)
        if len(given) > 1:
            _fail(self, given[1], f"{' and '.join(given)} each give a password: keep one")
        if given and self.passwordless:
            _fail(self, "passwordless", f"passwordless is true but {given[0]} gives a password: keep one")
        if self.password_file is not None:
            try:
                self.password = SecretStr(read_secret_file(self.password_file))
            except ValueError as exc:
                _fail(self, "password_file", str(exc), self.password_file)
        elif given and not self.password.get_secret_value():
            _fail(self, given[0], "the password is empty (an unset variable?); for a login without "
                                  "password declare passwordless: true")
        elif not given:
            if not no_password:
                _fail(self, "password", "no password given: set password or password_file (or the environment "
                                        "variable of this key), or declare passwordless: true")
            self.password = SecretStr("") if self.needs_login() else None
        return self


LOGIN_FIELDS = frozenset({"user", *PasswordLogin.model_fields})  # who logs in, and how: not what a config points at


def _fail(model: BaseModel, key: str, message: str, value: Any = None) -> None:
    """Raise a ValidationError located at ``key`` of ``model`` (pydantic prefixes the outer path,
    e.g. ``sources[0].password``). The value shown is never the secret."""
    raise ValidationError.from_exception_data(type(model).__name__, [InitErrorDetails(
        type=PydanticCustomError("login", "{reason}", {"reason": message}), loc=(key,), input=value)])
