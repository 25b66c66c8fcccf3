package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"k8s.io/utils/clock"
)

// A full disk is an answer, never an exit. etcd stops taking writes in one
// way only: its NOSPACE alarm, which it raises itself once its database
// reaches the backend quota (etcdserver/server.go:1981-2002) and which makes
// it refuse every write that takes space with "etcdserver: mvcc: database
// space exceeded" (etcdserver/apply/capped.go:33-45; datafs.EtcdNoSpace),
// while reads, deletes and compactions go on. A write of its own that fails
// on a full disk, by contrast, ends the whole process through its logger's
// Fatal (storage/backend/batch_tx.go:282, etcdserver/raft.go:257): that is
// how 25 ConfigMaps of 400 KB on a full data dir made a lab exit with
// status 1. So the lab
//   - raises the same alarm itself while the data dir's filesystem has less
//     than Config.EtcdDiskReserve free, before etcd's own writes can fail;
//   - while the alarm is up, compacts away the history that deleted and
//     replaced objects keep, and defragments when that gives back space and
//     the disk has room for the copy a defragmentation writes
//     (storage/backend/backend.go:472-614); the quota counts the database's
//     high-water size (storage/quota.go:133, backend.Size), which only a
//     defragmentation lowers;
//   - disarms the alarm once the database is back under four fifths of the
//     quota and the disk has half as much again as the reserve free, so
//     the lab resumes without a restart. etcd raises it again by itself on
//     the next write that does not fit. etcd counts the write's own size
//     (storage/quota.go:133), so it raises the alarm with the database up
//     to a request (1.5 MiB, embed/config.go:67) under
//     the quota: a fifth of the smallest quota (16 MiB) keeps the alarm from
//     being disarmed at once and raised again by the next write.

// EtcdSpace says whether the lab's etcd takes writes.
type EtcdSpace struct {
	// Full is true while etcd's NOSPACE alarm is raised: every write that
	// takes space is refused with "etcdserver: mvcc: database space
	// exceeded", which the apiserver hands on as a 500 with that message
	// (datafs.IsEtcdFull recognises it); reads, deletes and /healthz are
	// answered.
	Full bool
	// Reason says why, in words for a student; empty when not Full.
	Reason string
	// DBBytes is the database's size as the quota counts it, DBInUseBytes
	// what of it holds data; QuotaBytes the quota.
	DBBytes, DBInUseBytes, QuotaBytes int64
	// DiskFreeBytes is what the data dir's filesystem has free for the
	// lab's user (-1 when it could not be read).
	DiskFreeBytes int64
}

// EtcdSpace returns what the last space check found (every
// Config.EtcdSpaceCheck).
func (cp *ControlPlane) EtcdSpace() EtcdSpace {
	if cp.space == nil {
		return EtcdSpace{}
	}
	if s := cp.space.state.Load(); s != nil {
		return *s
	}
	return EtcdSpace{QuotaBytes: cp.cfg.EtcdQuotaBytes, DiskFreeBytes: -1}
}

// diskFree is what the filesystem holding dir has free for an unprivileged
// user.
func diskFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

func (cp *ControlPlane) diskFree() (int64, error) {
	if cp.cfg.diskFree != nil {
		return cp.cfg.diskFree(cp.cfg.DataDir)
	}
	return diskFree(cp.cfg.DataDir)
}

// spaceGuard raises, works off and disarms etcd's NOSPACE alarm.
type spaceGuard struct {
	srv     *etcdserver.EtcdServer
	dir     string
	quota   int64
	reserve int64
	free    func(dir string) (int64, error)
	log     *slog.Logger

	state     atomic.Pointer[EtcdSpace]
	compacted int64 // the revision the guard last compacted to
	raised    bool  // the guard raised the alarm (for the disk)
	full      bool  // the alarm was up at the last check
}

func newSpaceGuard(srv *etcdserver.EtcdServer, cfg Config, dir string) *spaceGuard {
	free := cfg.diskFree
	if free == nil {
		free = diskFree
	}
	return &spaceGuard{srv: srv, dir: dir, quota: cfg.EtcdQuotaBytes, reserve: cfg.EtcdDiskReserve, free: free, log: cfg.Logger}
}

// run checks every interval until ctx ends.
func (g *spaceGuard) run(ctx context.Context, clk clock.WithTicker, every time.Duration) {
	t := clk.NewTicker(every)
	defer t.Stop()
	g.check(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			g.check(ctx)
		}
	}
}

func (g *spaceGuard) check(ctx context.Context) {
	free, err := g.free(g.dir)
	if err != nil {
		free = -1
	}
	low := free >= 0 && free < g.reserve
	full := g.alarmed()
	if low && !full {
		if err := g.alarm(ctx, pb.AlarmRequest_ACTIVATE); err != nil {
			g.log.Error("could not stop etcd taking writes on a nearly full disk", "free", mib(free), "err", err)
		} else {
			full, g.raised = true, true
		}
	}
	if full {
		g.reclaim(ctx, free)
		roomy := free < 0 || free >= g.reserve+g.reserve/2
		if roomy && g.srv.Backend().Size() < g.quota-g.quota/5 {
			if err := g.alarm(ctx, pb.AlarmRequest_DEACTIVATE); err != nil {
				g.log.Error("could not let etcd take writes again", "err", err)
			} else {
				full, g.raised = false, false
			}
		}
	}
	be := g.srv.Backend()
	s := &EtcdSpace{Full: full, DBBytes: be.Size(), DBInUseBytes: be.SizeInUse(), QuotaBytes: g.quota, DiskFreeBytes: free}
	if full {
		s.Reason = g.reason(s, low)
	}
	if full != g.full {
		if full {
			g.log.Warn("etcd takes no more writes: "+s.Reason, "db", mib(s.DBBytes), "inUse", mib(s.DBInUseBytes), "quota", mib(g.quota), "diskFree", mib(free))
		} else {
			g.log.Info("etcd takes writes again", "db", mib(s.DBBytes), "quota", mib(g.quota), "diskFree", mib(free))
		}
		g.full = full
	}
	g.state.Store(s)
}

func (g *spaceGuard) reason(s *EtcdSpace, low bool) string {
	if low || (g.raised && s.DBBytes < g.quota) {
		return fmt.Sprintf("the data dir's disk has %s free, under the %s etcd keeps in reserve; free some disk space", mib(s.DiskFreeBytes), mib(g.reserve))
	}
	return fmt.Sprintf("etcd's database has reached its %s quota; delete objects to make room", mib(g.quota))
}

func (g *spaceGuard) alarmed() bool {
	for _, a := range g.srv.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

func (g *spaceGuard) alarm(ctx context.Context, action pb.AlarmRequest_AlarmAction) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := g.srv.Alarm(ctx, &pb.AlarmRequest{Action: action, MemberID: uint64(g.srv.MemberID()), Alarm: pb.AlarmType_NOSPACE})
	return err
}

// reclaim compacts every revision but the current one and defragments when
// that would give back at least a tenth of the database and the disk can
// take the copy. Compacting to the current revision makes the apiserver's
// watches start over from a fresh list; that is paid only while etcd is
// full, when the apiserver's own periodic compaction (a write) is refused.
func (g *spaceGuard) reclaim(ctx context.Context, free int64) {
	if rev := g.srv.KV().Rev(); rev > g.compacted {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := g.srv.Compact(cctx, &pb.CompactionRequest{Revision: rev, Physical: true})
		cancel()
		switch {
		case err == nil, errors.Is(err, mvcc.ErrCompacted):
			g.compacted = rev
		default:
			g.log.Error("compacting etcd", "revision", rev, "err", err)
		}
	}
	be := g.srv.Backend()
	size, inUse := be.Size(), be.SizeInUse()
	if size-inUse < size/10 || (free >= 0 && free-inUse < g.reserve) {
		return
	}
	if err := g.srv.Defragment(); err != nil {
		g.log.Error("defragmenting etcd", "err", err)
	}
}

func mib(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
