package server

import (
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/labstack/echo/v4"
)

// Config wires the server to the lab.
type Config struct {
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Logger == nil {
		return errors.New("server: logger is required")
	}
	return nil
}

// Server serves the lab's HTTP API. It answers /healthz with 503 until
// SetReady(true), so scripts and probes can wait for the lab.
type Server struct {
	cfg   Config
	echo  *echo.Echo
	ready atomic.Bool
}

// New builds the routes.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, echo: echo.New()}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.HTTPErrorHandler = s.errorHandler
	s.echo.GET("/healthz", s.healthz)
	return s, nil
}

// SetReady flips /healthz.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

func (s *Server) healthz(c echo.Context) error {
	if !s.ready.Load() {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "the lab is starting")
	}
	return c.String(http.StatusOK, "ok")
}

// errorHandler answers every error as {"error": "..."} so clients never
// have to parse HTML or guess.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	msg := "internal error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		} else {
			msg = http.StatusText(code)
		}
	} else {
		s.cfg.Logger.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(code)
		return
	}
	_ = c.JSON(code, map[string]string{"error": msg})
}
