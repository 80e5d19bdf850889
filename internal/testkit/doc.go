// Package testkit groups the harnesses only tests use, apart from the
// product's own internal packages: clitest (building and running the
// tools, bad-input tables, a child run as an unprivileged user), golden
// (golden files and -update), madtest (MAD codec vectors), ibsimtest (a
// private ibsim, OpenSM and the C tools under libumad2sim), jsonschema
// (validating the tools' JSON against docs/*.schema.json), manpage
// (man pages against the flags), completiontest (completion scripts) and
// mcjoin (multicast joins and leaves, which the tools never send).
// Nothing under cmd/ or pkg/ imports them outside _test.go files.
package testkit
