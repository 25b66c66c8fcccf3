package controlplane

// For the external tests.
var KubernetesModuleVersion = kubernetesModuleVersion

const PlaceholderCommit = placeholderCommit

const KubernetesGoMod = kubernetesGoMod

// SetDiskFree makes the control plane see fake free space on its data dir.
func SetDiskFree(c *Config, free func(dir string) (int64, error)) { c.diskFree = free }
