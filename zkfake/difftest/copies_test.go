package difftest_test

import (
	"reflect"
	"testing"

	"github.com/zksim/zksim/zkfake/difftest"
)

// DefaultConfig, Kinds and ACLs hand out values of the caller's own: what
// one caller does to them, the next call and the generator never see.
func TestExportedValuesAreCopies(t *testing.T) {
	cfg := difftest.DefaultConfig()
	before := difftest.Generate(7, cfg)

	kinds := difftest.Kinds()
	kinds[0] = "changed"
	if difftest.Kinds()[0] == "changed" {
		t.Errorf("Kinds() shares its slice between calls")
	}

	acls := difftest.ACLs()
	delete(acls, "open")
	acls["alice"][0].Perms = 0
	fresh := difftest.ACLs()
	if _, ok := fresh["open"]; !ok {
		t.Errorf("ACLs() shares its map between calls")
	}
	if fresh["alice"][0].Perms == 0 {
		t.Errorf("ACLs() shares its lists between calls")
	}

	if after := difftest.Generate(7, difftest.DefaultConfig()); !reflect.DeepEqual(before, after) {
		t.Errorf("changing the copies changed what Generate makes")
	}
}
