package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ccmlab/ccmlab/exercises"
	"github.com/ccmlab/ccmlab/internal/datafs"
	"github.com/ccmlab/ccmlab/internal/i18n"
)

// A full disk must not take the lab down, nor a full cluster database.
// Two stores can be full:
//
//   - the data dir's disk: a write into it fails with ENOSPC (datafs.IsFull:
//     the cloud's state file, the progress database);
//   - etcd's database: its backend quota is used up and the apiserver
//     answers writes with "etcdserver: mvcc: database space exceeded"
//     (datafs.IsEtcdFull: a controller switch, an exercise reset).
//
// A request whose write met either is answered 507 with a message that
// says what is full, that nothing was changed (or, for a reset that had
// begun, that it stopped part way) and that the lab takes changes again by
// itself; in Japanese with ?lang=ja, as the exercise endpoints. The
// errorHandler recognises the error wherever it came from. The lab keeps
// running, /healthz answers 200 "degraded: ..." and the page shows a
// banner.
//
// While the lab knows a store is full, the routes that write into it
// answer 507 before they try (needRoom), unless a fresh probe finds room
// again; a reset and a restart, which change many things one after the
// other, probe every time before they start. The lab's own etcd says
// itself when it takes no writes (Lab.EtcdSpace: its NOSPACE alarm, which
// lab/controlplane raises on a nearly full disk and lowers once there is
// room), so /healthz and the routes know it without a request having met
// it. The lab recovers by itself: while degraded, each health check probes
// the data dir with a small file and the cluster with a small object it
// creates and deletes, and the cloud's writer retries on its own
// (cloud.SaveError).

// probeName is the file the probe writes (and removes) in the data dir.
const probeName = ".ccmlab-space-probe"

// What a probe of the cluster creates (and deletes at once): a ConfigMap
// in kube-system, the namespace every cluster has and the lab's own
// components live in, with a random suffix so that probes never collide.
const (
	probeNamespace = metav1.NamespaceSystem
	probePrefix    = "ccmlab-space-probe-"
)

// clusterProbeEvery is how often the health check may probe the cluster:
// every page and the classroom's portal ask /healthz, and each probe is
// two writes.
const clusterProbeEvery = time.Second

// probeTimeout bounds a probe of the cluster, so a health check answers
// even when the apiserver does not.
const probeTimeout = 5 * time.Second

// store is what can be full.
type store int

const (
	storeDataDir store = iota + 1
	storeEtcd
)

// writes says which stores a route writes into (needRoom).
type writes int

const (
	writesData    writes = 1 << iota // the data dir: the cloud's state, the progress
	writesCluster                    // the cluster, through the apiserver (and etcd keeps its files in the data dir)
)

// fullStore says which store err says is full (0: none).
func fullStore(err error) store {
	switch {
	case err == nil:
		return 0
	case datafs.IsFull(err):
		return storeDataDir
	case datafs.IsEtcdFull(err):
		return storeEtcd
	}
	return 0
}

// diskWatch remembers that a request met a full store.
type diskWatch struct {
	full     atomic.Bool // the data dir: set by a 507, cleared by a successful probe
	etcdFull atomic.Bool // etcd: likewise
	probe    sync.Mutex  // one data-dir probe at a time

	// cluster serialises the health check's probes of the cluster; last
	// and lastFull are the latest, reused for clusterProbeEvery.
	cluster  sync.Mutex
	last     time.Time
	lastFull bool
}

func (s *Server) dataDirFullMsg() string {
	dir := s.cfg.DataDir
	if dir == "" {
		dir = "(unknown)"
	}
	return "data dir full: " + dir
}

// What /healthz says while etcd is full: etcdFullMsg and why (its own
// words when Lab.EtcdSpace gives them, etcd's answer otherwise). Reasons
// are joined with reasonSep (a reason may hold a "; ").
const (
	etcdFullMsg = "etcd database full: "
	reasonSep   = " | "
)

// etcdFullErr is the error of a write refused because Lab.EtcdSpace says
// etcd takes none: etcd's own text, so that it reads (datafs.IsEtcdFull)
// and is answered like the apiserver's.
func etcdFullErr(reason string) error {
	return fmt.Errorf("%s (%s)", datafs.EtcdNoSpace, reason)
}

// etcdSpace is Lab.EtcdSpace, or "not full" without one.
func (s *Server) etcdSpace() (full bool, reason string) {
	if l := s.lab.Load(); l != nil && l.EtcdSpace != nil {
		return l.EtcdSpace()
	}
	return false, ""
}

// fullText is the 507's message: what is full, what became of the
// request, and that the lab goes on. For etcd, the English one also says
// why when the lab's etcd says it (Lab.EtcdSpace, in English only).
func (s *Server) fullText(st store, stoppedPartWay bool) i18n.Text {
	var what i18n.Text
	switch st {
	case storeEtcd:
		what = i18n.Text{
			JA: "クラスタのデータベース (etcd) がいっぱいです (" + datafs.EtcdNoSpace + ")。",
			EN: "The cluster's database (etcd) is full (" + datafs.EtcdNoSpace + ").",
		}
		if full, why := s.etcdSpace(); full && why != "" {
			what.EN = "The cluster's database (etcd) is full (" + datafs.EtcdNoSpace + "): " + why + "."
		}
	default:
		what = i18n.Textf("ラボのデータディレクトリのディスクがいっぱいです (%[1]s)。",
			"The disk of the lab's data dir is full (%[1]s).", s.dataDirFullMsg())
	}
	outcome := i18n.Text{JA: "何も変更していません。", EN: "Nothing was changed."}
	if stoppedPartWay {
		outcome = i18n.Text{
			JA: "リセットは途中で止まりました。空きができたら、もう一度リセットしてください。",
			EN: "The reset stopped part way: reset the exercise again once there is room.",
		}
	}
	goesOn := i18n.Text{
		JA: "ラボは動き続けており、空きができれば自動で変更を受け付けます。",
		EN: "The lab keeps running and takes changes again by itself once there is room.",
	}
	if st == storeEtcd {
		goesOn = i18n.Text{
			JA: "ラボは動き続けており、空きができれば自動で変更を受け付けます (要らないオブジェクトを kubectl delete で消すか、データディレクトリのディスクがいっぱいならそこを空けてください)。",
			EN: "The lab keeps running and takes changes again by itself once there is room (delete objects you no longer need with kubectl delete, or free space on the data dir's disk if that is what is full).",
		}
	}
	return i18n.Text{JA: what.JA + outcome.JA + goesOn.JA, EN: what.EN + " " + outcome.EN + " " + goesOn.EN}
}

// diskFullError is the 507 for err when err says a store is full, nil
// otherwise. The first time a store is found full it is logged.
func (s *Server) diskFullError(c echo.Context, err error) *echo.HTTPError {
	st := fullStore(err)
	if st == 0 {
		return nil
	}
	s.noteFull(st, c.Request().Method+" "+c.Path(), err)
	msg := s.fullText(st, errors.Is(err, exercises.ErrResetStopped)).In(i18n.Lang(c.QueryParam("lang")))
	return echo.NewHTTPError(http.StatusInsufficientStorage, msg)
}

// noteFull remembers that st is full; the first time, it says so in the
// log with what met it.
func (s *Server) noteFull(st store, what string, err error) {
	switch st {
	case storeDataDir:
		if !s.disk.full.Swap(true) {
			s.cfg.Logger.Error("the data dir's disk is full; the lab goes on, but refuses what it cannot save",
				"dir", s.cfg.DataDir, "request", what, "err", err)
		}
	case storeEtcd:
		if !s.disk.etcdFull.Swap(true) {
			s.cfg.Logger.Error("etcd's database is full; the lab goes on, but refuses what the apiserver cannot store",
				"request", what, "err", err)
		}
	}
}

// needRoom is the route middleware for routes that write into w: while
// the lab knows such a store is full, it answers 507 before anything is
// tried, unless a fresh probe finds room again. With always, it probes
// even when nothing is known to be full: for a reset or a restart, which
// would otherwise stop half done.
func (s *Server) needRoom(w writes, always bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := s.checkRoom(c.Request().Context(), w, always); err != nil {
				return err // the errorHandler answers 507
			}
			return next(c)
		}
	}
}

// checkRoom returns the full store's error when a store of w is full.
// Every route needs room in the data dir: a write to the cluster too, as
// etcd keeps its files there.
func (s *Server) checkRoom(ctx context.Context, w writes, always bool) error {
	if always || s.disk.full.Load() || s.cloudSaveFull() {
		if err := s.writeProbe(); datafs.IsFull(err) {
			return err
		} else if err == nil && s.disk.full.Swap(false) {
			s.cfg.Logger.Info("the data dir's disk has room again", "dir", s.cfg.DataDir)
		}
	}
	if w&writesCluster != 0 {
		if full, why := s.etcdSpace(); full {
			return etcdFullErr(why)
		}
		if always || s.disk.etcdFull.Load() {
			if err := s.probeCluster(ctx); datafs.IsEtcdFull(err) {
				return err
			}
		}
	}
	return nil
}

func (s *Server) cloudSaveFull() bool {
	l := s.lab.Load()
	return l != nil && l.Cloud != nil && datafs.IsFull(l.Cloud.SaveError())
}

// degraded says why the lab is degraded ("" when it is not).
func (s *Server) degraded(ctx context.Context) string {
	var why []string
	if (s.disk.full.Load() && !s.probeDataDir()) || s.cloudSaveFull() {
		why = append(why, s.dataDirFullMsg())
	}
	if full, reason := s.etcdSpace(); full {
		why = append(why, etcdFullMsg+reason)
	} else if s.disk.etcdFull.Load() && s.clusterStillFull(ctx) {
		why = append(why, etcdFullMsg+datafs.EtcdNoSpace)
	}
	return strings.Join(why, reasonSep)
}

// probeDataDir tries a small write into the data dir and, when it
// succeeds, forgets that the disk was full. Without a DataDir there is
// nothing to probe and the flag stays.
func (s *Server) probeDataDir() bool {
	if s.cfg.DataDir == "" {
		return false
	}
	s.disk.probe.Lock()
	defer s.disk.probe.Unlock()
	if !s.disk.full.Load() {
		return true // another probe just succeeded
	}
	if s.writeProbe() != nil {
		return false
	}
	s.disk.full.Store(false)
	s.cfg.Logger.Info("the data dir's disk has room again", "dir", s.cfg.DataDir)
	return true
}

// writeProbe writes (and removes) a small file in the data dir; its error
// is the write's. Without a DataDir there is nothing to write.
func (s *Server) writeProbe() error {
	if s.cfg.DataDir == "" {
		return nil
	}
	path := filepath.Join(s.cfg.DataDir, probeName)
	err := s.cfg.Files.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "ccmlab checks that the data dir has room\n")
		return err
	})
	if err == nil {
		_ = os.Remove(path)
	} else if datafs.IsFull(err) {
		s.noteFull(storeDataDir, "space probe", err)
	}
	return err
}

// clusterStillFull is the health check's probe of the cluster, at most
// one per clusterProbeEvery; it reports whether etcd still refuses writes.
func (s *Server) clusterStillFull(ctx context.Context) bool {
	s.disk.cluster.Lock()
	defer s.disk.cluster.Unlock()
	if time.Since(s.disk.last) < clusterProbeEvery {
		return s.disk.lastFull
	}
	// Health checks that arrive during the probe wait for it (at most
	// probeTimeout) and take its answer.
	full := datafs.IsEtcdFull(s.probeCluster(ctx))
	s.disk.last, s.disk.lastFull = time.Now(), full
	return full
}

// probeCluster creates a small ConfigMap and deletes it at once: etcd
// with its NOSPACE alarm refuses the create, and once it takes it again
// the flag goes. It returns the create's error. A lab without a Client
// cannot probe and forgets the flag: it learns again from the next write
// that is refused.
func (s *Server) probeCluster(ctx context.Context) error {
	var client kubernetes.Interface
	if l := s.lab.Load(); l != nil {
		client = l.Client
	}
	if client == nil {
		s.disk.etcdFull.Store(false)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	cms := client.CoreV1().ConfigMaps(probeNamespace)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: probePrefix + strings.ToLower(rand.Text()[:8])},
		Data:       map[string]string{"why": "ccmlab checks that the cluster's database takes writes; it deletes this at once"},
	}, metav1.CreateOptions{FieldManager: "ccmlab"})
	if err != nil {
		if datafs.IsEtcdFull(err) {
			s.noteFull(storeEtcd, "space probe", err)
		}
		return err
	}
	if derr := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); derr != nil {
		s.cfg.Logger.Warn("deleting the cluster's space probe", "configmap", probeNamespace+"/"+cm.Name, "err", derr)
	}
	if s.disk.etcdFull.Swap(false) {
		s.cfg.Logger.Info("etcd's database takes writes again")
	}
	return nil
}

// noteConsoleOutput: kubectl in the console prints the apiserver's answer
// as a student would read it in a terminal, and the console answers 200
// with it (reads and deletions, which free space, go on). The lab still
// learns from it that etcd is full, so the page shows the banner.
func (s *Server) noteConsoleOutput(out string) {
	if strings.Contains(out, datafs.EtcdNoSpace) {
		s.noteFull(storeEtcd, "console", fmt.Errorf("kubectl: %s", datafs.EtcdNoSpace))
	}
}
