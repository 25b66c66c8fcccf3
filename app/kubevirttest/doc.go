// Package kubevirttest holds the integration tests of the kubevirt
// profile's world: the lab `ccmlab serve --profile kubevirt` builds, with
// its management side (a second apiserver holding the VMIs and the CCM),
// checked against the chapter's hands-on commands run verbatim.
package kubevirttest
