module topogang.io/bench/bindlimit

go 1.22
