package zkfake_test

import (
	"reflect"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// TestMethodSetOfZkConn checks that *zkfake.Conn has every method of
// *zk.Conn with the identical signature, so it can stand wherever code
// names an interface of *zk.Conn's methods.
func TestMethodSetOfZkConn(t *testing.T) {
	real, fake := reflect.TypeOf(&zk.Conn{}), reflect.TypeOf(&zkfake.Conn{})
	if real.NumMethod() < 20 {
		t.Fatalf("*zk.Conn has only %d methods: wrong type?", real.NumMethod())
	}
	for i := 0; i < real.NumMethod(); i++ {
		want := real.Method(i)
		got, ok := fake.MethodByName(want.Name)
		if !ok {
			t.Errorf("*zkfake.Conn lacks %s", want.Name)
			continue
		}
		// Compare without the receiver.
		if gs, ws := signature(got.Type), signature(want.Type); gs != ws {
			t.Errorf("%s: *zkfake.Conn has %s, *zk.Conn has %s", want.Name, gs, ws)
		}
	}
}

func signature(f reflect.Type) string {
	s := "("
	for i := 1; i < f.NumIn(); i++ {
		if i > 1 {
			s += ", "
		}
		if f.IsVariadic() && i == f.NumIn()-1 {
			s += "..." + f.In(i).Elem().String()
		} else {
			s += f.In(i).String()
		}
	}
	s += ") ("
	for i := 0; i < f.NumOut(); i++ {
		if i > 0 {
			s += ", "
		}
		s += f.Out(i).String()
	}
	return s + ")"
}
