package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/server/hub"
	"github.com/ccmlab/ccmlab/web"
)

// MaxRecording bounds the file a replay accepts. A lab's recording holds
// at most its ring (4096 frames) and one snapshot: a few megabytes.
const MaxRecording = 256 << 20

// maxLine bounds one line (a snapshot of a big lab is the largest).
const maxLine = 64 << 20

// Config says what to replay.
type Config struct {
	// Recording is the NDJSON file's content. Required.
	Recording []byte
	// Name is the file's name, for messages.
	Name string
	// DefaultLang is the page's language when the browser does not say.
	DefaultLang web.Lang
	// Logger receives request errors. Default slog.Default().
	Logger *slog.Logger
	// Listen is the listen address: its host and loopback names are the
	// Hosts the replay answers to (421 for any other).
	Listen string
}

func (c *Config) validate() error {
	if len(c.Recording) == 0 {
		return errors.New("replay: the recording is empty")
	}
	if len(c.Recording) > MaxRecording {
		return fmt.Errorf("replay: the recording is larger than %d MiB", MaxRecording>>20)
	}
	if c.Name == "" {
		c.Name = "recording"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Info describes a recording.
type Info struct {
	Epoch   string
	BaseSeq uint64
	LastSeq uint64
	Frames  int
	From    time.Time
	To      time.Time
}

type envelope struct {
	Seq  *uint64         `json:"seq"`
	Type string          `json:"type"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data"`
}

// Check reads a recording and says what is wrong with it, line by line:
// an optional "recording" header, one "snapshot" (the base), then frames
// whose seqs follow the base's without a gap, in time order.
func Check(rec []byte) (Info, error) {
	var info Info
	sc := bufio.NewScanner(bytes.NewReader(rec))
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n, haveBase := 0, false
	var last uint64
	var lastTime time.Time
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m envelope
		if err := json.Unmarshal(line, &m); err != nil {
			return info, fmt.Errorf("line %d is not a stream message: %v", n, err)
		}
		if m.Seq == nil || m.Type == "" || m.Time.IsZero() {
			return info, fmt.Errorf("line %d lacks seq, type or time", n)
		}
		switch {
		case !haveBase && m.Type == hub.TypeRecording:
			var hd hub.RecordingHeader
			if err := json.Unmarshal(m.Data, &hd); err != nil {
				return info, fmt.Errorf("line %d: the header: %v", n, err)
			}
			if hd.Version != hub.RecordingVersion {
				return info, fmt.Errorf("line %d: recording version %d; this ccmlab plays version %d", n, hd.Version, hub.RecordingVersion)
			}
			info.Epoch = hd.Epoch
		case !haveBase && m.Type == hub.TypeSnapshot:
			haveBase = true
			last, lastTime = *m.Seq, m.Time
			info.BaseSeq, info.From = last, m.Time
		case !haveBase:
			return info, fmt.Errorf("line %d is a %q message; a recording starts with a snapshot", n, m.Type)
		case m.Type == hub.TypeSnapshot || m.Type == hub.TypeRecording:
			return info, fmt.Errorf("line %d: a second %q in the recording", n, m.Type)
		default:
			if *m.Seq != last+1 {
				return info, fmt.Errorf("line %d: seq %d after %d; the recording has a gap", n, *m.Seq, last)
			}
			if m.Time.Before(lastTime) {
				return info, fmt.Errorf("line %d: time %s before the line above", n, m.Time.Format(time.RFC3339Nano))
			}
			last, lastTime = *m.Seq, m.Time
			info.Frames++
		}
	}
	if err := sc.Err(); err != nil {
		return info, fmt.Errorf("reading the recording: %v", err)
	}
	if !haveBase {
		return info, errors.New("the recording holds no snapshot")
	}
	info.LastSeq, info.To = last, lastTime
	return info, nil
}

// Server serves the page in replay mode and the recording.
type Server struct {
	cfg   Config
	info  Info
	page  http.Handler
	guard http.Handler
}

// New checks the recording and builds the handler.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	info, err := Check(cfg.Recording)
	if err != nil {
		return nil, fmt.Errorf("replay: %s: %w", cfg.Name, err)
	}
	page, err := web.Handler(web.Config{DefaultLang: cfg.DefaultLang, Replay: true})
	if err != nil {
		return nil, err
	}
	g, err := httpguard.New(httpguard.Config{Listen: cfg.Listen})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, info: info, page: page}
	s.guard = g.Handler(http.HandlerFunc(s.serve))
	return s, nil
}

// Info describes the recording being served.
func (s *Server) Info() Info { return s.info }

const notLive = "this is a replay of a recording: there is no lab to act on"

// ServeHTTP answers after the Host, cross-origin and query checks.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.guard.ServeHTTP(w, r) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/healthz":
		if !readOnly(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	case p == "/api/recording":
		if !readOnly(w, r) {
			return
		}
		if r.URL.RawQuery != "" && r.URL.Query().Has("since") {
			httpguard.WriteError(w, http.StatusBadRequest, "a replay serves its whole recording; since is not supported here")
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/x-ndjson")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Length", strconv.Itoa(len(s.cfg.Recording)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(s.cfg.Recording)
		}
	case p == "/ws" || strings.HasPrefix(p, "/api/"):
		httpguard.WriteError(w, http.StatusNotFound, notLive)
	default:
		s.page.ServeHTTP(w, r)
	}
}

func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	httpguard.WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
	return false
}
