/// The parts of `blepayd`: its configuration, the device's keys and ledger enrollment, the customer and business
/// services that run the payment drivers over BLE, and their control API on the system bus.
enum BlepayDaemon {}
