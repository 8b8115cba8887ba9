package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zksim/zksim/zkfake"
)

// Admin returns an HTTP handler that controls the served fake from outside
// the process, so that a test suite in any language can do what Go tests
// do with the fake's methods. Serve it on a loopback address only
// (cmd/zkfake-server's -admin flag). Every answer is JSON; a fault that
// cannot be done answers 4xx with {"error": "..."}.
//
//	GET  /sessions                       the live sessions: id, timeout, ephemerals, connected, partitioned
//	POST /sessions/{id}/expire           the server expires the session now
//	POST /sessions/{id}/drop             its connection drops; the client reconnects with its session
//	POST /sessions/{id}/partition        its connection drops and reconnects are refused until heal
//	POST /sessions/{id}/heal             ends the partition
//	POST /lose-reply                     {"op", "path_prefix", "session", "nth", "applied"}: zkfake.ReplyLoss;
//	                                     nth defaults to 1 (the next match), applied to true; 0 loses every match until reset
//	POST /members/{i}/stop, /start       stops or starts an ensemble member (zkfake.WithEnsemble)
//	POST /clock/advance?by=5s            moves a manual clock (zkfake.WithManualClock) forward
//	GET  /tree                           every znode: path, data (base64), stat, ACL
//	GET  /log                            the event log
//	POST /reset                          ends every session, empties the tree, starts every member, drops the losses
//
// Session ids are written as in ZooKeeper's logs, 0x-prefixed hex; decimal
// is accepted too.
func (l *Listener) Admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sessions", func(w http.ResponseWriter, r *http.Request) { reply(w, l.sessionInfos(), nil) })
	session := func(do func(id int64) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.ParseInt(r.PathValue("id"), 0, 64)
			if err != nil {
				reply(w, nil, badRequest{fmt.Errorf("session id %q: %v", r.PathValue("id"), err)})
				return
			}
			reply(w, map[string]string{"session": fmt.Sprintf("%#x", id)}, do(id))
		}
	}
	mux.HandleFunc("POST /sessions/{id}/expire", session(func(id int64) error {
		if !l.srv.Expire(id) {
			return notFound{fmt.Errorf("no session %#x", id)}
		}
		return nil
	}))
	mux.HandleFunc("POST /sessions/{id}/drop", session(l.Drop))
	mux.HandleFunc("POST /sessions/{id}/partition", session(l.Partition))
	mux.HandleFunc("POST /sessions/{id}/heal", session(l.Heal))
	mux.HandleFunc("POST /lose-reply", func(w http.ResponseWriter, r *http.Request) {
		var rule struct {
			Op         string `json:"op"`
			PathPrefix string `json:"path_prefix"`
			Session    string `json:"session"`
			Nth        *int   `json:"nth"`
			Applied    *bool  `json:"applied"`
		}
		if err := json.NewDecoder(r.Body).Decode(&rule); err != nil {
			reply(w, nil, badRequest{err})
			return
		}
		var id int64
		if rule.Session != "" {
			var err error
			if id, err = strconv.ParseInt(rule.Session, 0, 64); err != nil {
				reply(w, nil, badRequest{err})
				return
			}
		}
		// By default the next matching reply is lost, after the server
		// applied the request: a write whose outcome the client cannot know.
		loss := zkfake.ReplyLoss{Op: rule.Op, PathPrefix: rule.PathPrefix, SessionID: id, Nth: 1, Applied: true}
		if rule.Nth != nil {
			loss.Nth = *rule.Nth
		}
		if rule.Applied != nil {
			loss.Applied = *rule.Applied
		}
		l.srv.LoseReplies(loss)
		reply(w, map[string]any{"op": loss.Op, "path_prefix": loss.PathPrefix, "session": fmt.Sprintf("%#x", id), "nth": loss.Nth, "applied": loss.Applied}, nil)
	})
	member := func(do func(int)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			i, err := strconv.Atoi(r.PathValue("i"))
			if err != nil || i < 0 || i >= l.srv.Members() {
				reply(w, nil, badRequest{fmt.Errorf("member %q: the ensemble has %d (zkfake-server -members)", r.PathValue("i"), l.srv.Members())})
				return
			}
			do(i)
			reply(w, map[string]any{"member": i, "up": l.srv.MemberUp(i)}, nil)
		}
	}
	mux.HandleFunc("POST /members/{i}/stop", member(l.srv.StopMember))
	mux.HandleFunc("POST /members/{i}/start", member(l.srv.StartMember))
	mux.HandleFunc("POST /clock/advance", func(w http.ResponseWriter, r *http.Request) {
		by, err := time.ParseDuration(r.URL.Query().Get("by"))
		if err != nil || by < 0 {
			reply(w, nil, badRequest{fmt.Errorf("by=%q: want a duration such as 5s", r.URL.Query().Get("by"))})
			return
		}
		if !l.srv.FastForward(by) {
			reply(w, nil, badRequest{fmt.Errorf("the server has no manual clock (zkfake-server -manual-clock)")})
			return
		}
		reply(w, map[string]string{"advanced": by.String()}, nil)
	})
	mux.HandleFunc("GET /tree", func(w http.ResponseWriter, r *http.Request) { reply(w, znodeInfos(l.srv.Znodes()), nil) })
	mux.HandleFunc("GET /log", func(w http.ResponseWriter, r *http.Request) { reply(w, recordInfos(l.srv.Log()), nil) })
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		l.Reset()
		reply(w, map[string]bool{"reset": true}, nil)
	})
	return mux
}

// badRequest and notFound choose the HTTP status of an error.
type badRequest struct{ error }
type notFound struct{ error }

func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusConflict
		switch err.(type) {
		case badRequest:
			status = http.StatusBadRequest
		case notFound:
			status = http.StatusNotFound
		}
		w.WriteHeader(status)
		v = map[string]string{"error": err.Error()}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// sessionInfo is a session as GET /sessions shows it.
type sessionInfo struct {
	ID          string   `json:"id"`
	TimeoutMs   int64    `json:"timeout_ms"`
	Ephemerals  []string `json:"ephemerals"`
	Connected   bool     `json:"connected"`
	Partitioned bool     `json:"partitioned"`
}

func (l *Listener) sessionInfos() []sessionInfo {
	out := []sessionInfo{}
	for _, s := range l.liveSessions() {
		s.mu.Lock()
		connected := s.cc != nil
		s.mu.Unlock()
		l.mu.Lock()
		cut := l.partitioned[s.id]
		l.mu.Unlock()
		eph := l.srv.Ephemerals(s.id)
		if eph == nil {
			eph = []string{}
		}
		out = append(out, sessionInfo{ID: fmt.Sprintf("%#x", s.id), TimeoutMs: s.timeout.Milliseconds(), Ephemerals: eph, Connected: connected, Partitioned: cut})
	}
	return out
}

// znodeInfo is a node as GET /tree shows it.
type znodeInfo struct {
	Path string `json:"path"`
	Data string `json:"data"` // base64
	Stat any    `json:"stat"`
	ACL  any    `json:"acl"`
}

func znodeInfos(nodes []zkfake.Znode) []znodeInfo {
	out := make([]znodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = znodeInfo{Path: n.Path, Data: base64.StdEncoding.EncodeToString(n.Data), Stat: n.Stat, ACL: n.ACL}
	}
	return out
}

// recordInfo is an event-log record as GET /log shows it.
type recordInfo struct {
	Seq     int    `json:"seq"`
	Time    string `json:"time"`
	Kind    string `json:"kind"`
	Session string `json:"session"`
	Zxid    string `json:"zxid"`
	Op      string `json:"op"`
	Path    string `json:"path,omitempty"`
	Input   string `json:"input,omitempty"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
	Line    string `json:"line"` // the record as zkfake.Record.String renders it
}

func recordInfos(records []zkfake.Record) []recordInfo {
	out := make([]recordInfo, len(records))
	for i, r := range records {
		var errText string
		if r.Err != nil {
			errText = r.Err.Error()
		}
		out[i] = recordInfo{Seq: r.Seq, Time: r.Time.UTC().Format(time.RFC3339Nano), Kind: r.Kind.String(), Session: fmt.Sprintf("%#x", r.Session),
			Zxid: fmt.Sprintf("%#x", r.Zxid), Op: r.Op, Path: r.Path, Input: r.Input, Result: r.Result, Error: errText, Line: strings.TrimSpace(r.String())}
	}
	return out
}
