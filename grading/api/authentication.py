"""`Authorization: Token <secret>` (or `Bearer <secret>`) for scripts and trainers."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from grading.projects.tokens import live_token_marking_use


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("token", "bearer")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: use 'Authorization: Token <secret>'")
        try:
            secret = header[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token header: token is not ASCII") from None
        token = live_token_marking_use(secret)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token")
        return token.user, token

    def authenticate_header(self, request):
        return 'Token realm="api"'
