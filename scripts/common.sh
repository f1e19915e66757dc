# Sourced by the other scripts. PRESET picks a CMake preset (default, nogui, debug);
# its build folder is the preset's binaryDir in CMakePresets.json.
preset=${PRESET:-default}
if [[ $preset == default ]]; then build_dir=build; else build_dir=build-$preset; fi
