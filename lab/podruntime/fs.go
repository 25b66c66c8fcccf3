package podruntime

import (
	"errors"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
)

// memFS is a container's file system: a few files in memory, made from
// the Pod when the container starts. Nothing here is a host file: a path
// a student types is only ever a key of this map. Files under the
// writable directories can be written, within the container's bounds.
type memFS struct {
	mu       sync.Mutex
	files    map[string]string
	writable []string // directories whose files may be written
	maxFile  int
	maxTotal int
	total    int
	// mounts are the Pod's volumes this container mounts, by mount
	// path: each is a memFS of its own (the Pod's, shared by every
	// container that mounts it), its files keyed from "/".
	mounts map[string]*memFS
}

// at is the file system that holds p and p's path in it: a path under a
// mount is the volume's.
func (fs *memFS) at(p string) (*memFS, string) {
	for mp, v := range fs.mounts {
		if p == mp {
			return v, "/"
		}
		if rest, ok := strings.CutPrefix(p, mp+"/"); ok {
			return v, "/" + rest
		}
	}
	return fs, p
}

// newVolume is an emptyDir: every file in it may be written, within the
// Pod's bounds.
func newVolume(maxFile, maxTotal int) *memFS {
	return newMemFS(map[string]string{}, []string{""}, maxFile, maxTotal)
}

// The texts are the C library's strerror wording, capitalised as the
// commands of a real image print them.
var (
	errNotExist = errors.New("No such file or directory") //lint:ignore ST1005 strerror's text
	errReadOnly = errors.New("Read-only file system")     //lint:ignore ST1005 strerror's text
	errTooBig   = errors.New("No space left on device")   //lint:ignore ST1005 strerror's text
	errIsDir    = errors.New("Is a directory")            //lint:ignore ST1005 strerror's text
)

func newMemFS(files map[string]string, writable []string, maxFile, maxTotal int) *memFS {
	fs := &memFS{files: files, writable: writable, maxFile: maxFile, maxTotal: maxTotal}
	for _, v := range files {
		fs.total += len(v)
	}
	return fs
}

func (fs *memFS) read(p string) (string, error) {
	p = path.Clean(p)
	if p == "/dev/null" {
		return "", nil
	}
	if v, vp := fs.at(p); v != fs {
		return v.read(vp)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s, ok := fs.files[p]
	if !ok {
		return "", errNotExist
	}
	return s, nil
}

func (fs *memFS) isDir(p string) bool {
	p = path.Clean(p)
	if v, vp := fs.at(p); v != fs {
		return v.isDir(vp)
	}
	if p == "/" {
		return true
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for f := range fs.files {
		if strings.HasPrefix(f, p+"/") {
			return true
		}
	}
	return slices.Contains(fs.writable, p)
}

// list is what ls shows of a directory: its entries' base names.
func (fs *memFS) list(p string) ([]string, bool) {
	p = path.Clean(p)
	if v, vp := fs.at(p); v != fs {
		return v.list(vp)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, ok := fs.files[p]; ok {
		return []string{path.Base(p)}, true
	}
	seen := map[string]bool{}
	prefix := strings.TrimSuffix(p, "/") + "/"
	for f := range fs.files {
		if rest, ok := strings.CutPrefix(f, prefix); ok {
			name, _, _ := strings.Cut(rest, "/")
			seen[name] = true
		}
	}
	for _, w := range fs.writable {
		if rest, ok := strings.CutPrefix(w, prefix); ok {
			name, _, _ := strings.Cut(rest, "/")
			seen[name] = true
		}
	}
	for mp := range fs.mounts {
		if rest, ok := strings.CutPrefix(mp, prefix); ok {
			name, _, _ := strings.Cut(rest, "/")
			seen[name] = true
		}
	}
	if len(seen) == 0 && !slices.Contains(fs.writable, p) && p != "/" {
		return nil, false
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, true
}

func (fs *memFS) canWrite(p string) bool {
	for _, w := range fs.writable {
		if strings.HasPrefix(p, w+"/") {
			return true
		}
	}
	return false
}

// writer opens p for writing (truncating unless appending).
func (fs *memFS) writer(p string, appendTo bool) (io.Writer, error) {
	p = path.Clean(p)
	if p == "/dev/null" {
		return io.Discard, nil
	}
	if p == "/dev/stdout" || p == "/dev/stderr" {
		return nil, errNotExist // the shell maps these itself
	}
	if v, vp := fs.at(p); v != fs {
		if vp == "/" {
			return nil, errIsDir
		}
		return v.writer(vp, appendTo)
	}
	if !fs.canWrite(p) {
		if _, err := fs.read(p); err != nil && !fs.isDir(path.Dir(p)) {
			return nil, errNotExist
		}
		return nil, errReadOnly
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !appendTo {
		fs.total -= len(fs.files[p])
		fs.files[p] = ""
	} else if _, ok := fs.files[p]; !ok {
		fs.files[p] = ""
	}
	return &fileWriter{fs: fs, path: p}, nil
}

type fileWriter struct {
	fs   *memFS
	path string
}

func (w *fileWriter) Write(b []byte) (int, error) {
	fs := w.fs
	fs.mu.Lock()
	defer fs.mu.Unlock()
	cur := fs.files[w.path]
	if len(cur)+len(b) > fs.maxFile || fs.total+len(b) > fs.maxTotal {
		return 0, errTooBig
	}
	fs.files[w.path] = cur + string(b)
	fs.total += len(b)
	return len(b), nil
}
