package classroom

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
)

// Config is one class. Zero values take the defaults of defaults().
type Config struct {
	// Students names the class, in roster order (the order of the
	// dashboard and of the warm pool).
	Students []string
	// DataDir holds the tokens, students.csv, and one lab data dir per
	// student under students/<name>.
	DataDir string
	// Token is the instructor's token; empty means the one saved in
	// <DataDir>/instructor-token, or a new random one.
	Token string
	// PublicURL is how students reach the portal, for the links in
	// students.csv; default http://<listen address>.
	PublicURL string
	// Listen is the portal's listen address, and AllowedHosts the further
	// names it answers to (--allow-host): with PublicURL's host and the
	// loopback names, the only Hosts the portal serves (421 otherwise).
	// An empty Listen is taken from the listener Run is given.
	Listen       string
	AllowedHosts []string

	// Lab is what every student's lab runs with.
	Lab LabOptions
	// Backend is where labs run: BackendLocal (default) or
	// BackendKubernetes.
	Backend string
	// Kube configures the kubernetes backend.
	Kube KubeOptions
	// Binary is the ccmlab executable run for each lab; default
	// os.Executable().
	Binary string
	// Prestart starts every lab at once instead of on first visit.
	Prestart bool
	// Warm keeps this many labs of students who have not visited yet
	// started ahead (the next ones in roster order).
	Warm int
	// IdleStop stops a visited lab after this long without a request
	// (open websockets count as a visit in progress). Default 30m;
	// negative: never.
	IdleStop time.Duration
	// StartTimeout bounds how long a first visit waits for its lab's
	// /healthz. Default 3m.
	StartTimeout time.Duration
	// StopTimeout is how long a lab gets between SIGTERM and SIGKILL.
	// Default 30s.
	StopTimeout time.Duration

	// Limits bound what one client may hold at the portal (limits.go).
	Limits Limits

	Logger *slog.Logger
	// Out receives the lines meant for the instructor (the URL).
	Out   io.Writer
	Clock clock.WithTicker
}

// LabOptions are the lab flags applied to every student's lab.
type LabOptions struct {
	Profile string
	Nodes   int
	Addons  string
	// Memory is what one lab may use, in bytes: a local lab's Go soft
	// memory limit (its --memory-limit), a lab Pod's container limit
	// (lablimits.go). Default DefaultLabMemory.
	Memory int64
	// OpenFiles is each lab's limit of open files and sockets
	// (--max-open-files). Default DefaultLabOpenFiles.
	OpenFiles int
}

// args are the lab's flags; goMemory is its Go soft memory limit.
func (o LabOptions) args(goMemory int64) []string {
	// The instructor chose the lab: a student's page does not offer to
	// restart it into another profile.
	a := []string{"--restart=false",
		"--memory-limit", resource.NewQuantity(goMemory, resource.BinarySI).String(),
		"--max-open-files", strconv.Itoa(o.OpenFiles)}
	if o.Profile != "" {
		a = append(a, "--profile", o.Profile)
	}
	if o.Nodes > 0 {
		a = append(a, "--nodes", fmt.Sprint(o.Nodes))
	}
	if o.Addons != "" {
		a = append(a, "--addons", o.Addons)
	}
	return a
}

func (c *Config) defaults() error {
	if c.Backend == "" {
		c.Backend = BackendLocal
	}
	if c.Backend == BackendKubernetes {
		c.Kube.defaults()
	}
	if c.DataDir == "" {
		c.DataDir = ".ccmlab-classroom"
	}
	if c.IdleStop == 0 {
		c.IdleStop = 30 * time.Minute
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 3 * time.Minute
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = 30 * time.Second
	}
	if c.Lab.Memory == 0 {
		c.Lab.Memory = DefaultLabMemory
	}
	if c.Lab.OpenFiles == 0 {
		c.Lab.OpenFiles = DefaultLabOpenFiles
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Binary == "" && c.Backend == BackendLocal {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the ccmlab binary to run labs with: %w", err)
		}
		c.Binary = exe
	}
	return nil
}

func (c *Config) validate() error {
	if len(c.Students) == 0 {
		return errors.New("no students: name them with --students alice,bob or --roster FILE")
	}
	seen := map[string]bool{}
	for _, s := range c.Students {
		if err := ValidateName(s); err != nil {
			return err
		}
		if seen[s] {
			return fmt.Errorf("student %q is named twice", s)
		}
		seen[s] = true
	}
	if c.Warm < 0 {
		return fmt.Errorf("--warm %d: must not be negative", c.Warm)
	}
	if c.Token != "" && len(c.Token) < 8 {
		return errors.New("--token: use at least 8 characters (or leave it empty for a random one)")
	}
	if c.Lab.Nodes < 0 {
		return fmt.Errorf("--nodes %d: must not be negative", c.Lab.Nodes)
	}
	if c.Lab.Memory != 0 && c.Lab.Memory < minLabMemory {
		return fmt.Errorf("--lab-memory %s: give each lab at least %s", resource.NewQuantity(c.Lab.Memory, resource.BinarySI), resource.NewQuantity(minLabMemory, resource.BinarySI))
	}
	if c.Backend == BackendKubernetes && c.Lab.Memory != 0 && goMemory(c.Lab.Memory) < minLabMemory {
		return fmt.Errorf("--lab-memory %s: a lab Pod's Go runtime gets 7/8 of it, which must be at least %s", resource.NewQuantity(c.Lab.Memory, resource.BinarySI), resource.NewQuantity(minLabMemory, resource.BinarySI))
	}
	if c.Lab.OpenFiles != 0 && c.Lab.OpenFiles < minLabOpenFiles {
		return fmt.Errorf("--lab-open-files %d: give each lab at least %d", c.Lab.OpenFiles, minLabOpenFiles)
	}
	switch c.Backend {
	case "", BackendLocal:
	case BackendKubernetes:
		if c.Warm > 0 || c.Prestart {
			return errors.New("--warm and --prestart are for --backend local: the kubernetes backend starts every lab at once")
		}
		return c.Kube.validate()
	default:
		return fmt.Errorf("--backend %q: use local or kubernetes", c.Backend)
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// ValidateName accepts DNS-label-like names (lowercase letters, digits and
// inner dashes, at most 40 characters): a name becomes a URL path segment, a
// directory and, with a cluster backend, part of object names.
func ValidateName(s string) error {
	if !nameRE.MatchString(s) {
		return fmt.Errorf("student name %q: use lowercase letters, digits and inner dashes, 1 to 40 characters (it becomes /s/<name>/ and a directory)", s)
	}
	return nil
}

// ParseStudents splits a --students list ("alice,bob").
func ParseStudents(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ReadRoster reads one name per line; blank lines and lines starting with
// # are skipped.
func ReadRoster(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := ValidateName(line); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, line)
	}
	return out, sc.Err()
}
