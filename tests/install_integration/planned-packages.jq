# The packages a gpuenv install plan (--json) installs with apt-get: the operands after "install", without options,
# the values of -o/-t, and any =version suffix.
def packages: . as $a | (index(["install"])) as $i | if $i == null then empty else
  foreach $a[$i+1:][] as $x ({skip: false, out: null};
    if .skip then {skip: false, out: null}
    elif $x == "-o" or $x == "-t" then {skip: true, out: null}
    elif ($x | startswith("-")) then {skip: false, out: null}
    else {skip: false, out: $x} end;
    .out // empty) end;
[.steps[].commands[] | select(.[0] == "apt-get") | packages | sub("=.*$"; "")] | unique[]
