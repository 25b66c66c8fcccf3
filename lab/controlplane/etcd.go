package controlplane

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// freeLoopbackPort asks the kernel for an unused port. etcd wants URLs, not
// listeners, so there is a short window in which another process could take
// the port; on loopback in a lab that is acceptable, and a clash shows as a
// clear "address already in use" error rather than silent corruption.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startEtcd(cfgLab Config) (*embed.Etcd, string, error) {
	dataDir, verbosity := cfgLab.DataDir, cfgLab.Verbosity
	clientPort, err := freeLoopbackPort()
	if err != nil {
		return nil, "", err
	}
	peerPort, err := freeLoopbackPort()
	if err != nil {
		return nil, "", err
	}
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}

	cfg := embed.NewConfig()
	cfg.Name = "ccmlab"
	cfg.Dir = filepath.Join(dataDir, "etcd")
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// etcd logs through zap, not klog; keep it as quiet as the rest of the
	// control plane unless the user asked for more. Real failures still
	// come back as errors from StartEtcd and e.Err().
	cfg.LogLevel = "panic"
	if verbosity > 0 {
		cfg.LogLevel = "warn"
	}
	captureEtcdLogs(cfg, verbosity) // etcdlog.go
	// A lab is small; without these etcd would keep every revision and let
	// its database grow to 2 GiB (storage/quota.go:30, DefaultQuotaBytes),
	// which only costs the student disk. Past the quota etcd raises its
	// NOSPACE alarm and refuses writes (etcdspace.go takes it back).
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	cfg.QuotaBackendBytes = cfgLab.EtcdQuotaBytes
	// Each WAL segment is 64 MB, preallocated (storage/wal/wal.go:55); the
	// default keeps five besides the one in use (embed/config.go:63). Two
	// are as safe for a single member that snapshots every 10,000 entries.
	cfg.MaxWalFiles = 2

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("starting etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", fmt.Errorf("etcd failed: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", fmt.Errorf("etcd did not become ready within 60s")
	}
	return e, clientURL.String(), nil
}
