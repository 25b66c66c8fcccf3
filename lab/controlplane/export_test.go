package controlplane

// For the external tests.
var KubernetesModuleVersion = kubernetesModuleVersion

const PlaceholderCommit = placeholderCommit

const KubernetesGoMod = kubernetesGoMod
