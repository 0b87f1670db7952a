"""Database logins: where a password comes from, and the rule that one must be given.

Every component that logs in to a database (a MySQL or Oracle source, the shadow source,
a target) inherits ``PasswordLogin``. A password comes from exactly one of:

- ``password``: in the YAML or its environment variable (taken verbatim, cdc.config);
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
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field, SecretStr, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from cdc.dsn import split_password


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
