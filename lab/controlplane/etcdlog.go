package controlplane

import (
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/ccmlab/ccmlab/internal/podlog"
)

// etcd logs through zap, not klog. Once CaptureKlog has run, etcd's
// info-level lines go into the etcd static Pod's log in etcd's own JSON
// format (what `kubectl logs` of a kubeadm etcd Pod shows); the terminal
// gets the lines that end the process (warnings with -v). etcd ends the process through its
// logger's Fatal when a write of its own fails (storage/backend/
// batch_tx.go:282, etcdserver/raft.go:257): that last line must reach the
// lab's log, not only a Pod log that ends with the process.

var captureStore atomic.Pointer[podlog.Store]

type storeWriter struct{ store *podlog.Store }

func (w storeWriter) Write(p []byte) (int, error) {
	w.store.Append(podlog.StaticKey(ComponentEtcd), time.Now(), strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (w storeWriter) Sync() error { return nil }

// captureEtcdLogs sets cfg's logger when klog is captured; it reports
// whether it did.
func captureEtcdLogs(cfg *embed.Config, verbosity int) bool {
	st := captureStore.Load()
	if st == nil {
		return false
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey, enc.EncodeTime = "ts", zapcore.RFC3339NanoTimeEncoder
	// Panic and Fatal end the process; etcd's errors include its own
	// shutdown ("server closed"), which is no news.
	terminal := zapcore.PanicLevel
	if verbosity > 0 {
		terminal = zapcore.WarnLevel
	}
	cores := []zapcore.Core{
		zapcore.NewCore(zapcore.NewJSONEncoder(enc), storeWriter{st}, zapcore.InfoLevel),
		zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), terminal),
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewTee(cores...), zap.AddCaller()))
	return true
}
