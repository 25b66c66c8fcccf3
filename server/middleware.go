package server

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/internal/httpguard"
)

const tokenCookie = "ccmlab_token"

// auth requires the token when one is configured. Browsers cannot put a
// header on a websocket or a page load, so opening the page once with
// ?token= sets an HttpOnly, SameSite=Strict cookie that carries it after.
// A client out of its budget of failed guesses gets 429 and its token is
// not even compared: past the budget, a guess tells nothing.
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Token == "" || c.Path() == "/healthz" {
			return next(c)
		}
		r := c.Request()
		q := r.URL.Query().Get("token")
		bearer, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		ck, ckErr := r.Cookie(tokenCookie)
		if q == "" && !hasBearer && ckErr != nil {
			// No token at all is no guess.
			return needToken(c)
		}
		si, wait := s.signIns.Begin(r)
		if si == nil {
			c.Response().Header().Set("Retry-After", strconv.Itoa(httpguard.RetryAfter(wait)))
			return echo.NewHTTPError(http.StatusTooManyRequests, httpguard.TooManyMessage(wait))
		}
		queryOK := q != "" && s.tokenOK(q)
		ok := queryOK || hasBearer && s.tokenOK(bearer) || ckErr == nil && s.tokenOK(ck.Value)
		// Done before the handler: a websocket held open for an hour is
		// not a sign-in under way for an hour.
		si.Done(ok)
		if !ok {
			return needToken(c)
		}
		if queryOK {
			c.SetCookie(&http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		return next(c)
	}
}

func needToken(c echo.Context) error {
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="ccmlab"`)
	return echo.NewHTTPError(http.StatusUnauthorized, "this lab needs its token: send Authorization: Bearer <token>, or open the page with ?token=<token>")
}

func (s *Server) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}
