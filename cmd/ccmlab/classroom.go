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
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ccmlab/ccmlab/classroom"
	"github.com/ccmlab/ccmlab/internal/httpguard"
)

type classroomOptions struct {
	students, roster       string
	listen, dataDir, token string
	publicURL              string
	allowHosts             []string
	backend                string
	profile, addons        string
	nodes, warm, verbosity int
	prestart               bool
	idleStop               time.Duration

	// connsPerClient caps one client address's open connections at the
	// portal.
	connsPerClient int

	// What one lab may use (classroom.LabOptions).
	labMemory    string
	labOpenFiles int

	// The kubernetes backend.
	kubeconfig, namespace, image string
	storage, storageClass        string
}

// addKubeFlags are shared by classroom and classroom delete.
func (o *classroomOptions) addKubeFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "kubernetes backend: the cluster to run labs in (default: the cluster the portal runs in)")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "kubernetes backend: the namespace of every lab (created if missing)")
}

// restConfig is the cluster of the kubernetes backend: --kubeconfig, or
// the one the portal runs in.
func (o *classroomOptions) restConfig() (*rest.Config, error) {
	if o.kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
		}
		return c, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, errors.New("--backend kubernetes needs --kubeconfig FILE (or the portal running in the cluster)")
	}
	return c, nil
}

func newClassroomCommand(stdout io.Writer) *cobra.Command {
	o := &classroomOptions{listen: "127.0.0.1:8080", dataDir: ".ccmlab-classroom", backend: classroom.BackendLocal, profile: "aws", nodes: 3,
		idleStop: 30 * time.Minute, token: os.Getenv("CCMLAB_TOKEN"), namespace: "ccmlab-classroom", storage: classroom.StoragePVC,
		labMemory: resource.NewQuantity(classroom.DefaultLabMemory, resource.BinarySI).String(), labOpenFiles: classroom.DefaultLabOpenFiles}
	cmd := &cobra.Command{
		Use:   "classroom",
		Short: "Give every student a lab behind one portal, and the instructor a live view of the class",
		Long: `ccmlab classroom starts a portal: each student's lab is at /s/<name>/ with the
student's own token (the links are in <data-dir>/students.csv), and the
instructor's dashboard is at / with the instructor's token (printed, and saved
in <data-dir>/instructor-token).

--backend local (the default) runs each lab as a child process, started on the
student's first visit. --backend kubernetes --namespace NS --image IMAGE runs
each lab as a Pod in a cluster (with a Secret, a PVC or emptyDir, a Service),
all created at start; the portal then runs in that cluster
(deploy/classroom.yaml), and "ccmlab classroom delete" ends the class.`,
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
	fs.StringSliceVar(&o.allowHosts, "allow-host", o.allowHosts, "another host name the portal answers to besides loopback, the --listen host and --url's host; requests naming any other Host are refused")
	fs.StringVar(&o.backend, "backend", o.backend, "where labs run: local (child processes of this one) or kubernetes (a Pod per student in a cluster)")
	o.addKubeFlags(fs)
	fs.StringVar(&o.image, "image", o.image, "kubernetes backend: the ccmlab image every lab runs (built from the Dockerfile)")
	fs.StringVar(&o.storage, "storage", o.storage, "kubernetes backend: each lab's volume, pvc or emptydir (for clusters without a provisioner; data goes with the Pod)")
	fs.StringVar(&o.storageClass, "storage-class", o.storageClass, "kubernetes backend: the StorageClass of the labs' PVCs (default: the cluster's default)")
	fs.StringVar(&o.profile, "profile", o.profile, "every lab's cloud profile")
	fs.IntVar(&o.nodes, "nodes", o.nodes, "every lab's number of nodes at first start")
	fs.StringVar(&o.addons, "addons", o.addons, "every lab's add-ons (lbc)")
	fs.StringVar(&o.labMemory, "lab-memory", o.labMemory, "what one lab may use of memory: a local lab's Go soft limit, a lab Pod's container limit")
	fs.IntVar(&o.labOpenFiles, "lab-open-files", o.labOpenFiles, "what one lab may hold of open files and sockets (its RLIMIT_NOFILE)")
	fs.BoolVar(&o.prestart, "prestart", o.prestart, "start every lab now instead of on the student's first visit")
	fs.IntVar(&o.warm, "warm", o.warm, "keep this many labs started ahead, for the next students (in roster order) who have not come yet")
	fs.DurationVar(&o.idleStop, "idle-stop", o.idleStop, "stop a lab after this long without a visit (its data is kept; 0 = never)")
	fs.IntVarP(&o.verbosity, "v", "v", o.verbosity, "log verbosity of the portal (0 = warnings only)")
	fs.IntVar(&o.connsPerClient, "conns-per-client", httpguard.DefaultConnsPerClient, "connections one client address may hold open at the portal (429 past it); behind one NAT address or a reverse proxy the whole class is one client: raise it there")
	cmd.AddCommand(newClassroomDeleteCommand(stdout))
	return cmd
}

func newClassroomDeleteCommand(stdout io.Writer) *cobra.Command {
	o := &classroomOptions{backend: classroom.BackendKubernetes, namespace: "ccmlab-classroom"}
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Remove every object a kubernetes class created (its labs, their volumes, Secrets and Services)",
		Long: `ccmlab classroom delete removes what "ccmlab classroom --backend kubernetes"
created in --namespace: every object labelled app.kubernetes.io/part-of and
app.kubernetes.io/managed-by=ccmlab-classroom (the labs' Deployments, Services,
Secrets and PVCs, so the students' data too), and the namespace if the class
created it. The portal's own objects (deploy/classroom.yaml) are not its to remove.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.backend != classroom.BackendKubernetes {
				return fmt.Errorf("classroom delete is for --backend kubernetes; a local class lives in its --data-dir: stop the portal and remove that directory")
			}
			rc, err := o.restConfig()
			if err != nil {
				return err
			}
			return classroom.DeleteClass(cmd.Context(), classroom.KubeOptions{RestConfig: rc, Namespace: o.namespace}, stdout, wait)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.backend, "backend", o.backend, "the class's backend (only kubernetes has anything to delete)")
	o.addKubeFlags(fs)
	fs.DurationVar(&wait, "wait", 2*time.Minute, "how long to wait for the labs' Pods to be gone")
	// The flags of "classroom" are accepted, so the same command line with
	// "delete" added works.
	var ignored string
	var ignoredInt int
	var ignoredBool bool
	var ignoredDur time.Duration
	for _, f := range []string{"students", "roster", "listen", "data-dir", "token", "url", "allow-host", "image", "storage", "storage-class", "profile", "addons"} {
		fs.StringVar(&ignored, f, "", "ignored (accepted so the class's command line works)")
		_ = fs.MarkHidden(f)
	}
	for _, f := range []string{"lab-memory"} {
		fs.StringVar(&ignored, f, "", "ignored")
		_ = fs.MarkHidden(f)
	}
	for _, f := range []string{"nodes", "warm", "lab-open-files", "conns-per-client"} {
		fs.IntVar(&ignoredInt, f, 0, "ignored")
		_ = fs.MarkHidden(f)
	}
	fs.BoolVar(&ignoredBool, "prestart", false, "ignored")
	_ = fs.MarkHidden("prestart")
	fs.DurationVar(&ignoredDur, "idle-stop", 0, "ignored")
	_ = fs.MarkHidden("idle-stop")
	return cmd
}

func runClassroom(cmd *cobra.Command, o *classroomOptions, out io.Writer) error {
	kube := classroom.KubeOptions{}
	switch o.backend {
	case classroom.BackendLocal:
		for _, f := range []string{"kubeconfig", "namespace", "image", "storage", "storage-class"} {
			if cmd.Flags().Changed(f) {
				return fmt.Errorf("--%s is for --backend kubernetes (the labs here are local processes)", f)
			}
		}
	case classroom.BackendKubernetes:
		if o.image == "" {
			return errors.New("--backend kubernetes needs --image IMAGE: the ccmlab image every lab runs (docker build -t ccmlab:dev . from the repository)")
		}
		for _, f := range []string{"warm", "prestart", "idle-stop"} {
			if cmd.Flags().Changed(f) {
				return fmt.Errorf("--%s is for --backend local: in a cluster every lab starts with the class and runs until classroom delete", f)
			}
		}
		rc, err := o.restConfig()
		if err != nil {
			return err
		}
		kube = classroom.KubeOptions{RestConfig: rc, Namespace: o.namespace, Image: o.image, Storage: o.storage, StorageClass: o.storageClass}
	default:
		return fmt.Errorf("--backend %q: use local or kubernetes", o.backend)
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
	labMemory, err := resource.ParseQuantity(o.labMemory)
	if err != nil {
		return fmt.Errorf("--lab-memory %q: not a quantity such as 768Mi or 2Gi", o.labMemory)
	}
	lab := defaultServeOptions()
	lab.profile, lab.nodes, lab.addons, lab.token = o.profile, o.nodes, o.addons, "a-placeholder-token"
	lab.memoryLimit, lab.maxOpenFiles = labMemory.String(), o.labOpenFiles
	if _, err := lab.config(); err != nil {
		return fmt.Errorf("%w (from --lab-memory and --lab-open-files)", err)
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
		Listen: o.listen, AllowedHosts: o.allowHosts,
		Lab: classroom.LabOptions{Profile: o.profile, Nodes: o.nodes, Addons: o.addons,
			Memory: labMemory.Value(), OpenFiles: o.labOpenFiles},
		Backend: o.backend, Kube: kube,
		Prestart: o.prestart, Warm: o.warm, IdleStop: idle,
		Limits: classroom.Limits{ConnsPerClient: o.connsPerClient},
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
	fmt.Fprintf(out, "ccmlab classroom: each lab may use %s\n", cr.LabLimits())
	return cr.Run(cmd.Context(), ln)
}
