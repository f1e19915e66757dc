# Sourced by the other scripts. PRESET picks a CMake preset (default, nogui, debug);
# its build folder is the preset's binaryDir in CMakePresets.json.
preset=${PRESET:-default}
if [[ $preset == default ]]; then build_dir=build; else build_dir=build-$preset; fi
# configure: the preset's build folder, configured once; reconfigured from scratch when it was made by an older
# preset of the same name (the asan preset's build-asan, now clang with the fuzz targets, was GCC's without them).
configure() {
  if [[ $preset == asan && -f $build_dir/CMakeCache.txt ]] && ! grep -q '^KVSCOPE_FUZZ:BOOL=ON' "$build_dir/CMakeCache.txt"; then
    cmake --preset "$preset" --fresh >/dev/null
  elif [[ ! -f $build_dir/build.ninja ]]; then
    cmake --preset "$preset" >/dev/null
  fi
}
