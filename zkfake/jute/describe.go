package jute

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// DescribeFlags renders create flags as the project's request logs do
// (zktest.Request's Detail, the wire's gate):
// "persistent", "ephemeral", "sequential", "ephemeral sequential", with
// any other bit as "flags N".
func DescribeFlags(flags int32) string {
	// Every request's Detail is rendered, whether a hook reads it or not:
	// the usual flags cost no allocation.
	switch flags {
	case 0:
		return "persistent"
	case zk.FlagEphemeral:
		return "ephemeral"
	case zk.FlagSequence:
		return "sequential"
	case zk.FlagEphemeral | zk.FlagSequence:
		return "ephemeral sequential"
	}
	var parts []string
	if flags&zk.FlagEphemeral != 0 {
		parts = append(parts, "ephemeral")
	}
	if flags&zk.FlagSequence != 0 {
		parts = append(parts, "sequential")
	}
	return strings.Join(append(parts, fmt.Sprintf("flags %d", flags)), " ")
}

// DescribeVersion renders a version argument as the project's request
// logs do:
// nothing for -1 (any version), else "version N".
func DescribeVersion(version int32) string {
	if version == -1 {
		return ""
	}
	return fmt.Sprintf("version %d", version)
}
