// Package storetest is the conformance suite every [sluice.Store] must pass.
//
// A store's own tests call [Run] with a [Factory] that returns a fresh store
// whose clock the suite can set. The suite steps that clock through table
// cases and never sleeps, so every store must give exactly the same answers:
// the in-process store and the Redis store on a real redis-server run the
// same cases.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Harness {
//			clock := storetest.NewClock(time.Now())
//			s := memstore.New(memstore.Config{Clock: clock})
//			t.Cleanup(func() { s.Close(context.Background()) })
//			return storetest.Harness{Store: s, SetTime: clock.Set, Atomic: true}
//		})
//	}
package storetest
