package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// describeMachine names the CPU (from /proc/cpuinfo), its cores, the
// system's load when the run began (from /proc/loadavg: on a shared machine
// it says how much the numbers can be trusted) and the Go toolchain.
func describeMachine() string {
	cpu := cpuModel()
	if cpu == "" {
		cpu = "unknown CPU"
	}
	desc := fmt.Sprintf("%s, %d cores, %s/%s, %s", cpu, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	if load := loadAverage(); load != "" {
		desc += ", load average " + load + " at the start"
	}
	return desc
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.Join(strings.Fields(value), " ")
		}
	}
	return ""
}

// loadAverage returns the one-minute load average, or "".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// describeEnsemble says what the ensemble at spec (a ZK_SERVERS value) is:
// its ZooKeeper version, its members and their roles, and its tickTime,
// asked with the four-letter words srvr and conf. The addresses must be
// loopback, as ensemble.ParseServers requires.
func describeEnsemble(spec string) (string, error) {
	servers, err := ensemble.ParseServers(spec)
	if err != nil {
		return "", err
	}
	version, tick := "", ""
	roles := make([]string, 0, len(servers))
	for _, s := range servers {
		srvr, err := fourLetterWord(s, "srvr")
		if err != nil {
			return "", err
		}
		if version == "" {
			version = field(srvr, "Zookeeper version")
			if v, _, ok := strings.Cut(version, "-"); ok {
				version = v // drop the build hash and date
			}
		}
		roles = append(roles, s+" "+field(srvr, "Mode"))
		if tick == "" {
			conf, err := fourLetterWord(s, "conf")
			if err == nil {
				tick = confValue(conf, "tickTime")
			}
		}
	}
	desc := fmt.Sprintf("ZooKeeper %s, %d members (%s)", version, len(servers), strings.Join(roles, ", "))
	if tick != "" {
		desc += ", tickTime " + tick + " ms"
	}
	return desc, nil
}

// fourLetterWord sends a ZooKeeper four-letter word to server and returns
// the answer.
func fourLetterWord(server, word string) (string, error) {
	conn, err := net.DialTimeout("tcp", server, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", word, server, err)
	}
	return string(b), nil
}

// field returns the value of a "Key: value" line.
func field(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// confValue returns the value of a "key=value" line.
func confValue(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
