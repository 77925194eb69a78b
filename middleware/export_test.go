package middleware

// ResetNotRoutedLog lets the next warning of WriteError about a key run
// before routing through, whatever was logged before.
func ResetNotRoutedLog() {
	notRoutedLog.last.Store(0)
	notRoutedLog.suppressed.Store(0)
}
