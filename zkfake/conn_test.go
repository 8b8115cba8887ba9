package zkfake

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// requestFate, one look at a time: the link's state and connection now,
// and the connection the request went out on (-1: none yet).
func TestRequestFate(t *testing.T) {
	const gen = 3 // the connection the client has now
	tests := []struct {
		name     string
		link     linkState
		wire     int
		wantWire int
		lost     bool
	}{
		{"up, not sent: goes now", linkUp, -1, -1, false},
		{"up again on the connection it went out on: the cut healed", linkUp, gen, gen, false},
		{"up on a newer connection: its own was dropped", linkUp, gen - 1, gen - 1, true},
		{"cut, not sent: goes out on the cut connection", linkCut, -1, gen, false},
		{"cut, on its connection: still on the wire", linkCut, gen, gen, false},
		{"cut again, on an older connection: its own was dropped", linkCut, gen - 1, gen - 1, true},
		{"down, not sent: queued", linkDown, -1, -1, false},
		{"down, on the wire: lost with the connection", linkDown, gen, gen, true},
		{"crashed, not sent", linkCrashed, -1, -1, true},
		{"crashed, on the wire", linkCrashed, gen, gen, true},
		{"closed, not sent", linkClosed, -1, -1, true},
		{"closed, on the wire", linkClosed, gen, gen, true},
	}
	for _, tt := range tests {
		wire, err := requestFate(tt.link, tt.wire, gen)
		if wire != tt.wantWire || (err != nil) != tt.lost || err != nil && err != zk.ErrConnectionClosed {
			t.Errorf("%s: requestFate = %d, %v; want %d, lost %v", tt.name, wire, err, tt.wantWire, tt.lost)
		}
	}
}

// A request's whole wait, as the links it sees one after the other: it
// gets through at the first look at an up link, or is lost at the look
// requestFate says so.
func TestRequestFateAlongTheLink(t *testing.T) {
	type look struct {
		link linkState
		gen  int
	}
	tests := []struct {
		name    string
		looks   []look
		through bool
	}{
		{"sent into a cut that heals", []look{{linkCut, 1}, {linkCut, 1}, {linkUp, 1}}, true},
		{"sent into a cut the client noticed", []look{{linkCut, 1}, {linkDown, 2}}, false},
		{"sent into a cut, reconnected before it looked", []look{{linkCut, 1}, {linkUp, 2}}, false},
		{"sent into a cut, cut again before it looked", []look{{linkCut, 1}, {linkCut, 2}}, false},
		{"queued while reconnecting", []look{{linkDown, 1}, {linkDown, 1}, {linkUp, 2}}, true},
		{"queued, then sent into a new cut that heals", []look{{linkDown, 1}, {linkCut, 2}, {linkUp, 2}}, true},
		{"queued, then sent into a new cut the client noticed", []look{{linkDown, 1}, {linkCut, 2}, {linkDown, 3}, {linkUp, 4}}, false},
		{"queued when the client closed", []look{{linkDown, 1}, {linkClosed, 1}}, false},
	}
	for _, tt := range tests {
		wire, through := -1, false
		for _, l := range tt.looks {
			var err error
			wire, err = requestFate(l.link, wire, l.gen)
			if err != nil {
				break
			}
			if l.link == linkUp {
				through = true
				break
			}
		}
		if through != tt.through {
			t.Errorf("%s: got through %v, want %v", tt.name, through, tt.through)
		}
	}
}
