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
// still gets warnings only, and only with -v.

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
	cores := []zapcore.Core{zapcore.NewCore(zapcore.NewJSONEncoder(enc), storeWriter{st}, zapcore.InfoLevel)}
	if verbosity > 0 {
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(os.Stderr), zapcore.WarnLevel))
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewTee(cores...), zap.AddCaller()))
	return true
}
