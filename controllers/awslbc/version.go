package awslbc

import (
	"runtime/debug"

	"sigs.k8s.io/aws-load-balancer-controller/v3/pkg/version"
)

// modulePath is the controller's module, whose version the binary records.
const modulePath = "sigs.k8s.io/aws-load-balancer-controller/v3"

// The controller logs its version first thing ({"msg":"version",
// "GitVersion":...}, its main.go), from variables its release build sets
// with -ldflags -X. Embedded as a module they are empty; init fills in the
// module version the binary was built with, as a release of that version
// would show it.
func init() { setVersion(moduleVersion()) }

func setVersion(v string) {
	if version.GitVersion == "" {
		version.GitVersion = v
	}
}

// ModuleVersion is the controller module's version in go.mod, for
// binaries whose build info lists no modules (go test records none);
// TestModuleVersion keeps it equal to go.mod.
const ModuleVersion = "v3.6.2"

// moduleVersion is the controller module's version in the binary's build
// info, else ModuleVersion.
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ModuleVersion
	}
	for _, d := range info.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ModuleVersion
}
