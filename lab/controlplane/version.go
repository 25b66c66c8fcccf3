package controlplane

import (
	"runtime/debug"
	"strconv"
	_ "unsafe" // for go:linkname

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/version"
)

// The Kubernetes components report component-base's version variables
// (the apiserver's /version, hence `kubectl version`; kubectl's own client
// version; User-Agent headers). Kubernetes' release scripts set them with
// -ldflags -X; a module that embeds Kubernetes gets the placeholder
// v0.0.0-master+$Format:%H$ instead. `make build` sets them with -X as the
// release scripts do; for every other build (go build, go run, go test)
// init fills them in from the k8s.io/kubernetes version recorded in the
// binary's build info (or, in a test binary, which records none, from
// kubernetesGoMod), so both agree with go.mod.
//
// Linkname is the only way to write these unexported variables at run
// time: version.SetDynamicVersion refuses a version whose major, minor and
// patch differ from gitVersion's, and the placeholder's are 0.0.0.

//go:linkname gitVersion k8s.io/component-base/version.gitVersion
var gitVersion string

//go:linkname gitMajor k8s.io/component-base/version.gitMajor
var gitMajor string

//go:linkname gitMinor k8s.io/component-base/version.gitMinor
var gitMinor string

//go:linkname gitCommit k8s.io/component-base/version.gitCommit
var gitCommit string

const (
	placeholderVersion = "v0.0.0-master+$Format:%H$"
	placeholderCommit  = "$Format:%H$"
)

func init() { setKubernetesVersion(kubernetesModuleVersion()) }

// setKubernetesVersion sets the version variables to v unless the linker
// has set them already. It runs before any component is built: the
// apiserver derives its binary and emulation versions from gitVersion when
// its options are created.
func setKubernetesVersion(v string) {
	if gitVersion != placeholderVersion {
		return
	}
	parsed, err := utilversion.ParseSemantic(v)
	if err != nil {
		return // no build info (or a pseudo-version): keep upstream's placeholder
	}
	gitVersion = v
	gitMajor = strconv.FormatUint(uint64(parsed.Major()), 10)
	gitMinor = strconv.FormatUint(uint64(parsed.Minor()), 10)
	if gitCommit == placeholderCommit {
		gitCommit = "" // the module version names no commit
	}
	// component-base copied gitVersion into the version Get returns in its
	// own init, which ran before this one.
	_ = version.SetDynamicVersion(v)
}

// kubernetesGoMod is the k8s.io/kubernetes version in go.mod, for binaries
// whose build info lists no modules: go test does not record them. A test
// (TestKubernetesGoMod) keeps it equal to go.mod.
const kubernetesGoMod = "v1.37.2"

// kubernetesModuleVersion is the version of the k8s.io/kubernetes module
// this binary was built with.
func kubernetesModuleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return kubernetesGoMod
	}
	for _, dep := range bi.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return kubernetesGoMod
}
