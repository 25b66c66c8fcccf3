package labclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/ccmlab/ccmlab/internal/httpguard"
	"github.com/ccmlab/ccmlab/internal/labapi"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one call. A reset waits for the lab to
	// settle, which takes seconds on a loaded machine, so it is generous.
	DefaultTimeout = 2 * time.Minute
	// MaxAnswer bounds an answer's body; the largest, an exercise's
	// detail, is tens of kilobytes.
	MaxAnswer = 16 << 20
	// MaxMessage bounds one stream message; a snapshot of a big lab is
	// megabytes.
	MaxMessage = 64 << 20
)

// Config says which lab to call and how.
type Config struct {
	// Addr is the lab's host:port.
	Addr string
	// Token is the lab's bearer token ("" for a lab without one).
	Token string
	// HTTP makes the calls; nil: a client with DefaultTimeout. Share one
	// between clients to share its connections.
	HTTP *http.Client
}

func (c *Config) defaults() {
	if c.HTTP == nil {
		c.HTTP = &http.Client{Timeout: DefaultTimeout}
	}
}

func (c *Config) validate() error {
	if c.Addr == "" {
		return errors.New("labclient: the lab's address is required")
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("labclient: the lab's address %q is not host:port: %w", c.Addr, err)
	}
	return nil
}

// Client calls one lab. It is cheap: make one per lab address, since a
// lab that restarts may come back at another.
type Client struct {
	cfg Config
}

// New checks cfg and builds the client.
func New(cfg Config) (*Client, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg}, nil
}

// Error is a lab's answer that was not a success.
type Error struct {
	Method, Path string
	// Code is the HTTP status code, Status its line ("404 Not Found").
	Code   int
	Status string
	// Message is the lab's {"error": "..."}, else its body as text.
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, e.Status, e.Message)
}

// IsNotFound says whether err is a lab's 404: an exercise, or an
// endpoint, this lab does not have.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == http.StatusNotFound
}

// Healthy asks GET /healthz; nil when the lab answers 200 (it may still
// say "degraded: ..."; that lab answers).
func (c *Client) Healthy(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodGet, "/healthz", nil)
	return err
}

// Exercises is GET /api/exercises: every exercise with the student's
// progress.
func (c *Client) Exercises(ctx context.Context) ([]labapi.Summary, error) {
	var out []labapi.Summary
	return out, c.call(ctx, http.MethodGet, "/api/exercises", nil, &out)
}

// Exercise is GET /api/exercises/<id>: one exercise's steps and the
// student's place in it (with the causes to choose from for
// labapi.MysteryID).
func (c *Client) Exercise(ctx context.Context, id string) (labapi.Detail, error) {
	var out labapi.Detail
	return out, c.call(ctx, http.MethodGet, exercisePath(id), nil, &out)
}

// Reset is POST /api/exercises/<id>/reset; opts.Cause names the hidden
// cause of the diagnosis challenge (empty: the lab picks one). It answers
// the exercise as it is after the reset.
func (c *Client) Reset(ctx context.Context, id string, opts labapi.ResetOptions) (labapi.Detail, error) {
	var out labapi.Detail
	return out, c.call(ctx, http.MethodPost, exercisePath(id)+"/reset", opts, &out)
}

// Faults is GET /api/cloud/faults.
func (c *Client) Faults(ctx context.Context) (labapi.Faults, error) {
	var out labapi.Faults
	return out, c.call(ctx, http.MethodGet, "/api/cloud/faults", nil, &out)
}

// SetFaults is PUT /api/cloud/faults: f replaces every fault; the answer
// is the faults now in force.
func (c *Client) SetFaults(ctx context.Context, f labapi.Faults) (labapi.Faults, error) {
	var out labapi.Faults
	return out, c.call(ctx, http.MethodPut, "/api/cloud/faults", f, &out)
}

// SetLatency sets the cloud latency and keeps the other faults: a read
// then a write, so a fault the student changes in between is lost (the
// lab has no partial update).
func (c *Client) SetLatency(ctx context.Context, d time.Duration) (labapi.Faults, error) {
	f, err := c.Faults(ctx)
	if err != nil {
		return labapi.Faults{}, err
	}
	f.Latency = labapi.Duration{Duration: d}
	return c.SetFaults(ctx, f)
}

func exercisePath(id string) string { return "/api/exercises/" + url.PathEscape(id) }

// call sends body (nil: none) as JSON and decodes a 2xx answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	b, err := c.do(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the lab's answer is not what this ccmlab reads: %w", method, path, err)
	}
	return nil
}

// do sends one request and returns the body of a 2xx answer; any other
// is an *Error.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.cfg.Addr+path, body)
	if err != nil {
		return nil, err
	}
	c.authorize(req.Header)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxAnswer))
	if res.StatusCode/100 != 2 {
		return nil, answerError(method, path, res, b)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return b, nil
}

func (c *Client) authorize(h http.Header) {
	if c.cfg.Token != "" {
		h.Set("Authorization", "Bearer "+c.cfg.Token)
	}
}

// answerError reads a refusal: the lab's {"error": "..."}, or its body as
// text when it is something else (a proxy's page, say).
func answerError(method, path string, res *http.Response, b []byte) *Error {
	e := &Error{Method: method, Path: path, Code: res.StatusCode, Status: res.Status}
	var body httpguard.ErrorBody
	if json.Unmarshal(b, &body) == nil && body.Error != "" {
		e.Message = body.Error
	} else {
		e.Message = string(bytes.TrimSpace(b))
	}
	if e.Message == "" {
		e.Message = http.StatusText(res.StatusCode)
	}
	return e
}

// Stream is the lab's live stream (/ws): the same messages the page
// reads.
type Stream struct {
	conn *websocket.Conn
}

// Stream opens the lab's stream. The first message is a snapshot
// (labapi.TypeSnapshot). The HTTP client's timeout bounds the handshake
// only (coder/websocket applies it so), not the stream.
func (c *Client) Stream(ctx context.Context) (*Stream, error) {
	h := http.Header{}
	c.authorize(h)
	conn, res, err := websocket.Dial(ctx, "ws://"+c.cfg.Addr+"/ws", &websocket.DialOptions{HTTPClient: c.cfg.HTTP, HTTPHeader: h})
	if err != nil {
		if res != nil && res.StatusCode/100 != 2 && res.StatusCode != http.StatusSwitchingProtocols {
			var b []byte
			if res.Body != nil {
				b, _ = io.ReadAll(io.LimitReader(res.Body, MaxAnswer))
			}
			return nil, answerError(http.MethodGet, "/ws", res, b)
		}
		return nil, err
	}
	conn.SetReadLimit(MaxMessage)
	return &Stream{conn: conn}, nil
}

// Next reads the next message; its Data is one of server/stream's types,
// as its Type says (labapi.TypeResync: the lab dropped messages, re-read it).
func (s *Stream) Next(ctx context.Context) (labapi.Message, error) {
	_, b, err := s.conn.Read(ctx)
	if err != nil {
		return labapi.Message{}, err
	}
	var m labapi.Message
	if err := json.Unmarshal(b, &m); err != nil {
		return labapi.Message{}, fmt.Errorf("a stream message that is not an envelope: %w", err)
	}
	return m, nil
}

// Close ends the stream at once.
func (s *Stream) Close() error { return s.conn.CloseNow() }
