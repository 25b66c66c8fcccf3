package server

import (
	"crypto/subtle"
	"net/http"
	"net/url"
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

// sameOrigin refuses mutations a browser sends on behalf of another site
// (and websocket upgrades from one), so a page elsewhere cannot switch the
// student's controllers off. Requests without an Origin (curl, kubectl-style
// clients) are allowed; the token guards those when the lab is exposed.
func (s *Server) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
		if safe && !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			return next(c)
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			return echo.NewHTTPError(http.StatusForbidden, "cross-origin request refused")
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || !strings.EqualFold(u.Host, r.Host) {
				return echo.NewHTTPError(http.StatusForbidden, "cross-origin request refused: origin "+origin+" is not "+r.Host)
			}
		}
		return next(c)
	}
}
