enum BlueZPlaceholder {}
