package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxBody bounds JSON request bodies; the largest legitimate one (a lab's
// faults, a classroom action naming a class) is a few kilobytes.
const MaxBody = 64 << 10

// Error is a refused body: the status and the message to answer with.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func bad(code int, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// DecodeOptions tune DecodeJSON.
type DecodeOptions struct {
	// Optional accepts an empty body (dst stays as it is).
	Optional bool
	// AllowUnknownFields lets fields dst lacks pass.
	AllowUnknownFields bool
}

// DecodeJSON reads r's body into dst strictly: at most MaxBody bytes
// (413), Content-Type application/json with at most a UTF-8 charset (415),
// one JSON value (400 for trailing data), no key twice in an object (400:
// which one wins is the decoder's accident, not the sender's intent), no
// unknown fields unless allowed (400). Every refusal says what was wrong.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any, opts DecodeOptions) *Error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return bad(http.StatusRequestEntityTooLarge, "body larger than %d bytes", MaxBody)
		}
		return bad(http.StatusBadRequest, "reading body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if opts.Optional {
			return nil
		}
		return bad(http.StatusBadRequest, "a JSON body is required")
	}
	if e := checkContentType(r.Header.Values("Content-Type")); e != nil {
		return e
	}
	if e := checkDuplicates(body); e != nil {
		return e
	}
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		// encoding/json leaves dst as it was for null: the request would
		// go on as if an empty object had been sent.
		return bad(http.StatusBadRequest, "the body is null: send a JSON object ({} when no field is needed)")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if !opts.AllowUnknownFields {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad(http.StatusBadRequest, "malformed JSON: more than one value in the body")
	}
	return nil
}

func checkContentType(values []string) *Error {
	const want = "send Content-Type: application/json"
	switch len(values) {
	case 0:
		return bad(http.StatusUnsupportedMediaType, "body must be application/json: %s", want)
	case 1:
	default:
		return bad(http.StatusUnsupportedMediaType, "Content-Type given %d times: %s, once", len(values), want)
	}
	ct := values[0]
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return bad(http.StatusUnsupportedMediaType, "body must be application/json, not %s", ct)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return bad(http.StatusUnsupportedMediaType, "body must be application/json (charset utf-8 at most), not %s", ct)
		}
	}
	return nil
}

// checkDuplicates walks the body's tokens and refuses an object that names
// a key twice. It also catches malformed JSON first, with its offset.
func checkDuplicates(body []byte) *Error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return decodeError(err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{keys: map[string]bool{}, object: true, key: true})
			case '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{})
			default:
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				// One value read; trailing data is DecodeJSON's to refuse.
				return nil
			}
			continue
		}
		if top == nil {
			return nil // a scalar body
		}
		if top.object {
			if top.key {
				// encoding/json matches fields without regard to case, with
				// Unicode's folding, so "enabled" and "Enabled", or "qps"
				// and "qpſ" (ſ folds to s), are the same field twice.
				k, _ := tok.(string)
				folded := foldName(k)
				if top.keys[folded] {
					return bad(http.StatusBadRequest, "malformed JSON: key %q appears twice in one object (keys are matched as encoding/json matches them: without regard to case, with Unicode case folding)", k)
				}
				top.keys[folded] = true
				top.key = false
			} else {
				top.key = true
			}
		}
	}
}

// foldName is encoding/json's key folding (Go 1.26 encoding/json
// fold.go, appendFoldedName and foldRune): two keys match the same field
// exactly when their folded forms are equal. Invalid UTF-8 folds to
// U+FFFD, as encoding/json decodes it.
func foldName(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range k {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			continue
		}
		// The smallest rune of r's case-folding orbit.
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		b.WriteRune(r)
	}
	return b.String()
}

func decodeError(err error) *Error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return bad(http.StatusBadRequest, "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		return bad(http.StatusBadRequest, "field %q must be %s, not %s", typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return bad(http.StatusBadRequest, "malformed JSON: the body ends too early")
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return bad(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "json: "))
	default:
		return bad(http.StatusBadRequest, "invalid body: %v", err)
	}
}
