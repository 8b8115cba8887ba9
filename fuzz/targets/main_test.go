package targets

import (
	"testing"

	"github.com/zksim/zksim/fuzz/internal/pinned"
)

func TestMain(m *testing.M) { pinned.Main(m, longTier) }
