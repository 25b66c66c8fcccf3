package classroom

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// tokens are kept in the data dir so a restarted portal keeps every link
// it handed out valid.
type tokens struct {
	instructor string
	students   map[string]string
}

func loadTokens(dir, instructor string, students []string) (*tokens, error) {
	t := &tokens{instructor: instructor, students: map[string]string{}}
	ipath := filepath.Join(dir, "instructor-token")
	if t.instructor == "" {
		b, err := os.ReadFile(ipath)
		switch {
		case err == nil:
			t.instructor = strings.TrimSpace(string(b))
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
		if t.instructor == "" {
			t.instructor = newToken()
		}
	}
	spath := filepath.Join(dir, "student-tokens.json")
	if b, err := os.ReadFile(spath); err == nil {
		if err := json.Unmarshal(b, &t.students); err != nil {
			return nil, fmt.Errorf("%s: %w", spath, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, s := range students {
		if t.students[s] == "" {
			t.students[s] = newToken()
		}
	}
	if err := t.save(dir); err != nil {
		return nil, err
	}
	return t, nil
}

// save writes the tokens to the data dir.
func (t *tokens) save(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "instructor-token"), []byte(t.instructor+"\n"), 0o600); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(t.students, "", "  ")
	return os.WriteFile(filepath.Join(dir, "student-tokens.json"), b, 0o600)
}

// studentURL is the link a student is given.
func studentURL(base, name, token string) string {
	return strings.TrimRight(base, "/") + "/s/" + name + "/?token=" + url.QueryEscape(token)
}

// writeStudentsCSV writes name,url for each student, in roster order.
func writeStudentsCSV(path, base string, students []string, t *tokens) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"name", "url"})
	for _, s := range students {
		_ = w.Write([]string{s, studentURL(base, s, t.students[s])})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
