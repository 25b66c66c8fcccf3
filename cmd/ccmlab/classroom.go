package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ccmlab/ccmlab/classroom"
)

type classroomOptions struct {
	students, roster       string
	listen, dataDir, token string
	publicURL              string
	backend                string
	profile, addons        string
	nodes, warm, verbosity int
	prestart               bool
	idleStop               time.Duration
}

func newClassroomCommand(stdout io.Writer) *cobra.Command {
	o := &classroomOptions{listen: "127.0.0.1:8080", dataDir: ".ccmlab-classroom", backend: "local", profile: "aws", nodes: 3,
		idleStop: 30 * time.Minute, token: os.Getenv("CCMLAB_TOKEN")}
	cmd := &cobra.Command{
		Use:   "classroom",
		Short: "Give every student a lab behind one portal, and the instructor a live view of the class",
		Long: `ccmlab classroom starts a portal: each student's lab is at /s/<name>/ with the
student's own token (the links are in <data-dir>/students.csv), and the
instructor's dashboard is at / with the instructor's token (printed, and saved
in <data-dir>/instructor-token).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClassroom(cmd, o, stdout) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.students, "students", o.students, "the class: a comma list of names (lowercase letters, digits, dashes)")
	fs.StringVar(&o.roster, "roster", o.roster, "the class: a file with one name per line")
	fs.StringVar(&o.listen, "listen", o.listen, "address of the portal")
	fs.StringVar(&o.dataDir, "data-dir", o.dataDir, "where the class keeps its tokens and every student's lab")
	fs.StringVar(&o.token, "token", o.token, "the instructor's token (default: the saved one, or a new random one; env CCMLAB_TOKEN)")
	fs.StringVar(&o.publicURL, "url", o.publicURL, "the URL students reach the portal at, for students.csv (default http://<listen>)")
	fs.StringVar(&o.backend, "backend", o.backend, "where labs run: local (child processes of this one)")
	fs.StringVar(&o.profile, "profile", o.profile, "every lab's cloud profile")
	fs.IntVar(&o.nodes, "nodes", o.nodes, "every lab's number of nodes at first start")
	fs.StringVar(&o.addons, "addons", o.addons, "every lab's add-ons (lbc)")
	fs.BoolVar(&o.prestart, "prestart", o.prestart, "start every lab now instead of on the student's first visit")
	fs.IntVar(&o.warm, "warm", o.warm, "keep this many labs started ahead, for the next students (in roster order) who have not come yet")
	fs.DurationVar(&o.idleStop, "idle-stop", o.idleStop, "stop a lab after this long without a visit (its data is kept; 0 = never)")
	fs.IntVarP(&o.verbosity, "v", "v", o.verbosity, "log verbosity of the portal (0 = warnings only)")
	return cmd
}

func runClassroom(cmd *cobra.Command, o *classroomOptions, out io.Writer) error {
	if o.backend != "local" {
		return fmt.Errorf("--backend %q: only local is available so far", o.backend)
	}
	if (o.students == "") == (o.roster == "") {
		return errors.New("name the class with either --students alice,bob or --roster FILE")
	}
	students := classroom.ParseStudents(o.students)
	if o.roster != "" {
		f, err := os.Open(o.roster)
		if err != nil {
			return fmt.Errorf("--roster: %w", err)
		}
		students, err = classroom.ReadRoster(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("--roster %s: %w", o.roster, err)
		}
	}
	// The lab flags are checked here, once, rather than by every child.
	lab := defaultServeOptions()
	lab.profile, lab.nodes, lab.addons, lab.token = o.profile, o.nodes, o.addons, "x"
	if err := lab.validate(); err != nil {
		return err
	}
	level := slog.LevelWarn
	if o.verbosity > 0 {
		level = slog.LevelInfo
	}
	if o.verbosity > 1 {
		level = slog.LevelDebug
	}
	idle := o.idleStop
	if idle == 0 {
		idle = -1 // never
	}
	cr, err := classroom.New(classroom.Config{
		Students: students, DataDir: o.dataDir, Token: o.token, PublicURL: o.publicURL,
		Lab:      classroom.LabOptions{Profile: o.profile, Nodes: o.nodes, Addons: o.addons},
		Prestart: o.prestart, Warm: o.warm, IdleStop: idle,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Out:    out,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, errors.Unwrap(err))
	}
	return cr.Run(cmd.Context(), ln)
}
