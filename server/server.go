package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/httpguard"
)

// Controllers is the CCM manager as the server sees it.
type Controllers interface {
	Status() map[string]bool
	Enable(name string) error
	Disable(name string) error
}

// Config wires the server to the lab. Only Logger is required, so the
// server can answer /healthz while the lab is still starting; the API
// answers 503 until Lab is set with SetLab.
type Config struct {
	Logger *slog.Logger
	// Token, when set, is required on every request (bearer header, or the
	// cookie set by opening the page with ?token=).
	Token string
	// Assets serves the web view at / (nil: no page).
	Assets http.Handler
	// DataDir is named in the 507 a full disk answers and probed for room
	// (diskfull.go); Files writes the probe (default datafs.OS{}).
	DataDir string
	Files   datafs.Writer
	// Listen is the address the server listens on, and AllowedHosts more
	// names it answers to (--allow-host): a request whose Host is none of
	// them, nor a loopback name, is refused (421) before anything runs.
	Listen       string
	AllowedHosts []string
	// SignIns bounds failed token guesses per client (429 past them);
	// zero values take httpguard's defaults.
	SignIns httpguard.SignInConfig
}

func (c *Config) validate() error {
	if c.Logger == nil {
		return errors.New("server: logger is required")
	}
	if c.Files == nil {
		c.Files = datafs.OS{}
	}
	return nil
}

// Server serves the lab's HTTP API. It answers /healthz with 503 until
// SetReady(true), so scripts and probes can wait for the lab.
type Server struct {
	cfg     Config
	guard   *httpguard.Guard
	signIns *httpguard.SignIns
	echo    *echo.Echo
	ready   atomic.Bool
	lab     atomic.Pointer[Lab]
	disk    diskWatch
}

// New builds the routes.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	guard, err := httpguard.New(httpguard.Config{Listen: cfg.Listen, AllowedHosts: cfg.AllowedHosts})
	if err != nil {
		return nil, err
	}
	signIns, err := httpguard.NewSignIns(cfg.SignIns)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, guard: guard, signIns: signIns, echo: echo.New()}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.HTTPErrorHandler = s.errorHandler
	s.echo.Use(s.auth)
	s.echo.GET("/healthz", s.healthz)
	s.routes()
	return s, nil
}

// SetReady flips /healthz.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// ServeHTTP runs the guard (Host, cross-origin, query) before echo: a
// refused request reaches no route, not even the token check.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.guard.Handler(s.echo).ServeHTTP(w, r)
}

func (s *Server) healthz(c echo.Context) error {
	if !s.ready.Load() {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "the lab is starting")
	}
	if why := s.degraded(c.Request().Context()); why != "" {
		return c.String(http.StatusOK, "degraded: "+why)
	}
	return c.String(http.StatusOK, "ok")
}

// errorHandler answers every error as {"error": "..."}, through the writer
// every ccmlab server shares, so clients never have to parse HTML or
// guess.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	msg := "internal error"
	if full := s.diskFullError(c, err); full != nil {
		err = full
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		m, _ := he.Message.(string)
		switch {
		case code == http.StatusMethodNotAllowed:
			msg = fmt.Sprintf("method %s is not allowed on %s", c.Request().Method, c.Request().URL.Path)
		case code == http.StatusNotFound && he == echo.ErrNotFound:
			msg = fmt.Sprintf("no such endpoint: %s %s", c.Request().Method, c.Request().URL.Path)
		case m != "":
			msg = m
		default:
			msg = http.StatusText(code)
		}
	} else {
		s.cfg.Logger.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(code)
		return
	}
	httpguard.WriteError(c.Response(), code, msg)
}
