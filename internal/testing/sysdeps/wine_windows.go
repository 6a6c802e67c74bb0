package sysdeps

import (
	"sync"

	"golang.org/x/sys/windows"
)

// UnderWine reports whether this Windows program runs under Wine (its
// ntdll exports wine_get_version; Windows' does not).
var UnderWine = sync.OnceValue(func() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
})
