package fuzz

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake"
)

// step is one step of a case as the story tells it: the harness's action,
// what the clients did, and what the server did meanwhile.
type step struct {
	index   int
	at      time.Duration // virtual time since the case began
	start   time.Time
	action  string
	lines   []string        // the clients' side, in the order the harness saw it
	records []zkfake.Record // the server's side: its log while the step ran
	verdict string          // a finding the log showed in this step
	span    time.Duration   // how long the step let time pass
	quiet   bool            // time passing with nothing to tell: merged when told
	// lostAfter, when not 0, is how many of lines come before the server's
	// account of the step's lost exchange: the request the loss befell is
	// the last of them, and what the client then saw comes after.
	lostAfter int
}

// tick moves time on a little and takes in what that woke, so that every
// step happens at an instant of its own.
func (h *harness) tick() {
	time.Sleep(stepTime)
	h.settle()
}

// begin starts a step of the story.
func (h *harness) begin(action string) {
	h.nSteps++
	st := &step{index: len(h.story), at: h.now(), start: time.Now(), action: action}
	h.story = append(h.story, st)
	h.cur = st
}

// note adds a line to the current step. GUIDs are elided when the story is
// rendered, which most cases never need.
func (h *harness) note(format string, args ...any) {
	h.cur.lines = append(h.cur.lines, fmt.Sprintf(format, args...))
}

// abbreviated joins sorted names with sep, and past listedInFull of them
// tells only the first and last few and how many there are: a mutant that
// leaks a node at every move lists thousands, and a story that repeats
// them at every listing grows to tens of megabytes that nobody reads.
func abbreviated(names []string, sep string) string {
	if len(names) <= listedInFull {
		return strings.Join(names, sep)
	}
	const each = listedInFull / 2
	return fmt.Sprintf("%s%s… %d more …%s%s", strings.Join(names[:each], sep), sep, len(names)-2*each, sep, strings.Join(names[len(names)-each:], sep))
}

// listedInFull is how many names a story lists before it abbreviates.
const listedInFull = 16

// describeCall renders a call a client makes.
func describeCall(r *request) string {
	s := r.method
	if r.path != "" {
		s += " " + r.path
	}
	if r.detail != "" {
		s += " (" + r.detail + ")"
	}
	return s
}

func describeResult(result string, err error) string {
	if err != nil {
		return err.Error()
	}
	if result == "" {
		return "ok"
	}
	return result
}

// ownSession names the harness's own sessions (setting up, deleting a
// client's node, reading the server for the checks), which are no
// client's: the story leaves their comings and goings out.
const ownSession = "the harness's own session"

// client names the client a session belongs to.
func (h *harness) client(session int64) string {
	if name, ok := h.sessions[session]; ok {
		return name
	}
	return fmt.Sprintf("session %#x", session)
}

// tell files the server's event log under the steps it happened in and runs
// the detectors that read the log.
func (h *harness) tell(log []zkfake.Record) {
	herd := newHerdDetector(h)
	i := 0
	for _, r := range log {
		for i+1 < len(h.story) && !r.Time.Before(h.story[i+1].start) {
			i++
		}
		st := h.story[i]
		st.records = append(st.records, r)
		if msg := herd.observe(r, i+1); msg != "" && h.finding == nil && !h.leftOut[Herd] {
			h.finding = &Finding{Detector: Herd, Summary: StableName(msg)}
			st.verdict = "✗ herd: " + h.finding.Summary
		}
	}
}

// describeRecord tells one record of the server's log, or returns "" for
// records the story leaves out (reads and writes the clients' side already
// tells, and faults that are the harness's own actions).
func (h *harness) describeRecord(r zkfake.Record, stepIndex int) string {
	switch r.Kind {
	case zkfake.RecordWatch:
		return fmt.Sprintf("%s is notified: %s %s", h.client(r.Session), strings.TrimPrefix(r.Op, "Event"), r.Path)
	case zkfake.RecordSession:
		if h.sessions[r.Session] == ownSession {
			// The harness opens and closes its own sessions as it needs
			// them; only their expiry would be news.
			if r.Op == "expireSession" {
				return fmt.Sprintf("the server expires %s %#x", ownSession, r.Session)
			}
			return ""
		}
		switch r.Op {
		case "createSession":
			if stepIndex == 0 {
				return ""
			}
			return fmt.Sprintf("%s's new session %#x begins", h.client(r.Session), r.Session)
		case "expireSession":
			return fmt.Sprintf("the server expires session %#x of %s: its ephemeral nodes are deleted", r.Session, h.client(r.Session))
		case "closeSession":
			return fmt.Sprintf("%s's session %#x is closed", h.client(r.Session), r.Session)
		case "reconnect":
			return fmt.Sprintf("%s reconnects; session %#x carries on", h.client(r.Session), r.Session)
		case "expired":
			return fmt.Sprintf("%s learns that its session %#x has expired", h.client(r.Session), r.Session)
		case "abandonSession":
			return fmt.Sprintf("%s gives up its session %#x by its own clock and opens a new one; the server, told nothing, keeps the old session and its nodes until it expires it", h.client(r.Session), r.Session)
		}
	case zkfake.RecordFault:
		switch r.Result {
		case "request lost":
			return fmt.Sprintf("%s's %s %s never reaches the server", h.client(r.Session), r.Op, r.Path)
		case "reply lost":
			return fmt.Sprintf("the server applies %s's %s %s, but the reply is lost", h.client(r.Session), r.Op, r.Path)
		}
	}
	return ""
}

// render tells the steps as a numbered list, step i as number i+1, the
// number findings use. Stretches of time passing with nothing to tell are
// merged into one line, numbered with the range of steps it merges.
func (h *harness) render() string {
	var b strings.Builder
	var quiet []*step
	flush := func() {
		if len(quiet) == 0 {
			return
		}
		total := time.Duration(0)
		for _, q := range quiet {
			total += q.span
		}
		if len(quiet) == 1 {
			fmt.Fprintf(&b, "%3d. [%s] %s\n", quiet[0].index+1, at(quiet[0].at), quiet[0].action)
		} else {
			fmt.Fprintf(&b, "%3d-%d. [%s] time passes: nobody can move for %s\n", quiet[0].index+1, quiet[len(quiet)-1].index+1, at(quiet[0].at), total.Round(time.Millisecond))
		}
		quiet = nil
	}
	for _, st := range h.story {
		var server, lost []string
		for _, r := range st.records {
			line := h.describeRecord(r, st.index)
			switch {
			case line == "":
			case r.Kind == zkfake.RecordFault && st.lostAfter > 0:
				lost = append(lost, line)
			default:
				server = append(server, line)
			}
		}
		if st.verdict != "" {
			server = append(server, st.verdict)
		}
		if st.quiet && len(st.lines) == 0 && len(server) == 0 && len(lost) == 0 {
			quiet = append(quiet, st)
			continue
		}
		flush()
		fmt.Fprintf(&b, "%3d. [%s] %s\n", st.index+1, at(st.at), StableName(st.action))
		for i, l := range st.lines {
			if i == st.lostAfter && i > 0 {
				for _, l := range lost {
					fmt.Fprintf(&b, "       · %s\n", StableName(l))
				}
				lost = nil
			}
			fmt.Fprintf(&b, "       %s\n", StableName(l))
		}
		for _, l := range append(lost, server...) {
			fmt.Fprintf(&b, "       · %s\n", StableName(l))
		}
	}
	flush()
	return b.String()
}

// at renders a virtual instant of the case.
func at(d time.Duration) string {
	return fmt.Sprintf("+%.3fs", d.Seconds())
}

// renderLog renders the server's event log, one record a line.
func renderLog(log []zkfake.Record) string {
	var b strings.Builder
	for _, r := range log {
		b.WriteString(StableName(r.String()))
		b.WriteByte('\n')
	}
	return b.String()
}

// restartName names the process that restarts s next, as the story names
// a restarted process everywhere: "client 0 (restart 1)".
func restartName(s *slot) string { return restartedName(s.id, s.incs) }

// restartedName names a client's process after n restarts; the first
// process is the client's plain name.
func restartedName(client, n int) string {
	if n == 0 {
		return fmt.Sprintf("client %d", client)
	}
	return fmt.Sprintf("client %d (restart %d)", client, n)
}

// stepAt returns the story's number for the step that was under way at
// virtual instant d since the case began.
func (h *harness) stepAt(d time.Duration) int {
	i := sort.Search(len(h.story), func(i int) bool { return h.story[i].at > d })
	return max(i, 1)
}

// stampStep returns the story's number for the step of a timestamp of the
// case's history.
func (h *harness) stampStep(stamp int64) int {
	return h.stepAt(h.rec.Reading(stamp).Sub(h.start))
}

// instantStep returns the story's number for the step of an instant.
func (h *harness) instantStep(i linearizability.Instant) int {
	return h.stepAt(i.Time().Sub(h.start))
}

// incName names an incarnation as the story does.
func incName(inc *incarnation) string {
	return restartedName(inc.slot.id, inc.n-1)
}

// story renders the case's story.
func (c *caseResult) story() string {
	if c.rendered == "" {
		c.rendered = c.h.render()
	}
	return c.rendered
}

// eventLog renders the server's event log.
func (c *caseResult) eventLog() string { return renderLog(c.log) }

// transcript is the whole case as text: the story and the server's log.
// The same draws must give the same transcript, byte for byte.
func (c *caseResult) transcript() string {
	return c.story() + "\n" + c.eventLog()
}
