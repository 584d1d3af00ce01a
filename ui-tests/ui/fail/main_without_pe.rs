#[shmem_typed::main]
fn main() {
    println!("hello");
}
