// Package awsclitest checks issue 37's done-when list on the world
// `ccmlab serve --nodes 2` builds, with the upstream AWS provider, as a
// student types it: Debian's /usr/bin/aws (and the image's Python aws)
// after `. <data-dir>/aws.env`.
package awsclitest
