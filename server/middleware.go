package server

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

const tokenCookie = "ccmlab_token"

// auth requires the token when one is configured. Browsers cannot put a
// header on a websocket or a page load, so opening the page once with
// ?token= sets an HttpOnly, SameSite=Strict cookie that carries it after.
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Token == "" || c.Path() == "/healthz" {
			return next(c)
		}
		r := c.Request()
		if q := r.URL.Query().Get("token"); q != "" && s.tokenOK(q) {
			c.SetCookie(&http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			return next(c)
		}
		if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") && s.tokenOK(strings.TrimPrefix(h, "Bearer ")) {
			return next(c)
		}
		if ck, err := r.Cookie(tokenCookie); err == nil && s.tokenOK(ck.Value) {
			return next(c)
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ccmlab"`)
		return echo.NewHTTPError(http.StatusUnauthorized, "this lab needs its token: send Authorization: Bearer <token>, or open the page with ?token=<token>")
	}
}

func (s *Server) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}
