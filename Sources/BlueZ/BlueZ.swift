/// BlueZ: typed access to bluetoothd's `org.bluez` D-Bus API, built on DBusKit.
///
/// Central side: adapters (power, discovery filter, discovery), devices (connect with retries, service
/// resolution, disconnect, connection state) and remote GATT characteristics (read, write, notifications,
/// MTU). Peripheral side: advertisements and GATT applications declared as data, whose registrations return
/// handles that unregister and that register again by themselves when bluetoothd restarts.
/// `org.bluez.Error.*` replies become `BlueZError`s with stable codes.
enum BlueZ {
    static let service = "org.bluez"
    static let adapterInterface = "org.bluez.Adapter1"
    static let deviceInterface = "org.bluez.Device1"
    static let gattServiceInterface = "org.bluez.GattService1"
    static let gattCharacteristicInterface = "org.bluez.GattCharacteristic1"
    static let gattManagerInterface = "org.bluez.GattManager1"
    static let advertisementInterface = "org.bluez.LEAdvertisement1"
    static let advertisingManagerInterface = "org.bluez.LEAdvertisingManager1"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
}
