// DBusKit: blepay's binding to libdbus-1, and the only module that imports it.
//
// It connects to a bus (system, session or an address), makes async method calls with timeouts, turns
// signals selected by match rules into async sequences, and exports objects (methods, properties with
// `PropertiesChanged`, `ObjectManager`, `Introspectable`). One thread per connection owns the libdbus
// handle; it never waits for a reply, so a peer that calls back into us while we wait (bluetoothd does,
// during registration) is always answered. Start with `DBusConnection.connect(to:)`.
